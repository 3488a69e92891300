import FlatlandHTTP
import Foundation
import Synchronization

/// A request's deadline: the work's result, or ``Outcome/passed`` once `seconds` have gone by,
/// whichever comes first. At the deadline the work is cancelled and not waited for: a request
/// that never ends (a connection that neither answers nor closes) cannot hold its caller. A
/// cancel of the caller cancels the work, whose result (its cancellation) is then returned; the
/// deadline still bounds the wait.
enum RequestDeadline {
    enum Outcome<T: Sendable>: Sendable {
        /// The work ended first, with this result.
        case finished(T)
        /// The deadline came first.
        case passed
    }

    /// The first of two answers to arrive; the second is ignored.
    private final class FirstAnswer<T: Sendable>: Sendable {
        private struct State {
            var answer: Outcome<T>?
            var waiter: CheckedContinuation<Outcome<T>, Never>?
        }

        private let state = Mutex(State())

        func offer(_ outcome: Outcome<T>) {
            let waiter = state.withLock { s -> CheckedContinuation<Outcome<T>, Never>? in
                guard s.answer == nil else { return nil }
                s.answer = outcome
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: outcome)
        }

        func wait() async -> Outcome<T> {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> Outcome<T>? in
                    if let answer = s.answer { return answer }
                    s.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        /// The first answer, or ``Outcome/passed`` after `seconds`; `cancel` stops the work when
        /// the deadline passes or the caller is cancelled (it is not waited for).
        func race(_ seconds: TimeInterval, cancel: @escaping @Sendable () -> Void) async -> Outcome<T> {
            // A dispatch timer, not a sleeping task: cancelling it when the work ends first
            // wakes no thread (a cancelled sleep resumes its task; a push ends one an
            // operation). A cancelled item stays with dispatch until its time: it holds the
            // answer weakly, or every answer (a pull's page and its batch) would live for the
            // whole deadline.
            let timer = DispatchWorkItem { [weak self] in self?.offer(.passed) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
            let outcome = await withTaskCancellationHandler {
                await wait()
            } onCancel: {
                cancel()
            }
            timer.cancel()
            if case .passed = outcome { cancel() }
            return outcome
        }
    }

    /// Runs `work` within `seconds`.
    static func run<T: Sendable>(_ seconds: TimeInterval, _ work: @escaping @Sendable () async -> T) async -> Outcome<T>
    {
        let first = FirstAnswer<T>()
        let worker = Task { first.offer(.finished(await work())) }
        return await first.race(seconds) { worker.cancel() }
    }

    /// Waits for `task` within `seconds`: its result, or ``Outcome/passed`` (the task is then
    /// cancelled, and not waited for). A cancel of the caller cancels the task. The task runs
    /// in a task of its own already: no other is started to wait for it.
    static func run(_ seconds: TimeInterval, _ task: HTTPTask) async -> Outcome<Result<HTTPResult, HTTPError>> {
        let first = FirstAnswer<Result<HTTPResult, HTTPError>>()
        task.whenDone { first.offer(.finished($0)) }
        return await first.race(seconds) { task.cancel() }
    }

    /// Whether `seconds` is a deadline a request can have: more than 0, at most a day.
    static func isValid(_ seconds: TimeInterval) -> Bool { seconds > 0 && seconds <= 86_400 }
}
