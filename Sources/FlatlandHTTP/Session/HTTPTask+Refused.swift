import Flatland
import Foundation

extension HTTPTask {
    /// A task that failed before it was launched (a URL the session will not send to): it never
    /// runs, is never in flight, and its value is `error`, stamped with the request.
    static func failed(method: HTTPMethod, url: URL, environment: Environment, _ error: HTTPError) -> HTTPTask {
        var rng = SecureRandom()
        let id = EntityIDFormat.generate(prefix: "t", using: &rng)
        let request = HTTPRequest(
            method: method, url: url, endpoint: url.absoluteString, headers: environment.headers, taskID: id)
        let task = HTTPTask(id: id, request: request)
        task.complete(.failure(error.stamped(request)))
        return task
    }
}
