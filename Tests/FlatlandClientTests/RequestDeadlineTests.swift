import Foundation
import Testing

@testable import FlatlandSync

/// A request's deadline bounds the wait; once the work has answered, nothing of the answer is
/// kept until the deadline's time (a pull's pages would pile up for the whole deadline).
@Suite struct RequestDeadlineTests {
    final class Answer: Sendable {}

    /// Whether `object` is released within two seconds (a task that ended may be freed a moment
    /// after its result was taken).
    private func released(_ object: () -> Answer?) async -> Bool {
        for _ in 0..<200 {
            if object() == nil { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return object() == nil
    }

    @Test func anAnswerIsNotKeptUntilTheDeadlineOnceTheWorkHasAnswered() async {
        weak var kept: Answer?
        do {
            let outcome = await RequestDeadline.run(3600) { () async -> Answer in Answer() }
            guard case .finished(let answer) = outcome else {
                Issue.record("the deadline of an hour passed")
                return
            }
            kept = answer
        }
        #expect(await released { kept }, "the answer is held until the deadline of an hour")
    }

    @Test func theDeadlineStillEndsTheWaitForWorkThatNeverAnswers() async {
        let started = ContinuousClock.now
        let outcome = await RequestDeadline.run(0.2) { () async -> Int in
            // Work that ignores its cancel and never ends within the test.
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            return 1
        }
        guard case .passed = outcome else {
            Issue.record("work that never answers finished")
            return
        }
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}
