import CommandSettings
import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The RoadSave platform over HTTP (PROTOCOL §5), with URLSession: per-request timeouts and retries with
/// exponential backoff. Each call is its own async task, so a slow platform delays only the device that waits.
public struct HTTPPlatform: Platform {
    public struct Options: Sendable, Equatable {
        /// Time allowed for one request.
        public var requestTimeout: Double
        /// Attempts in all, the first included.
        public var attempts: Int
        /// Wait before the first retry; doubled for each further one.
        public var initialBackoff: Double

        public init(requestTimeout: Double = 5, attempts: Int = 3, initialBackoff: Double = 0.5) {
            self.requestTimeout = requestTimeout
            self.attempts = attempts
            self.initialBackoff = initialBackoff
        }
    }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case unreachable(String)
        case status(Int)
        case badResponse(String)

        public var description: String {
            switch self {
            case .unreachable(let reason): "platform unreachable: \(reason)"
            case .status(let code): "platform answered HTTP \(code)"
            case .badResponse(let reason): "platform answered something unusable: \(reason)"
            }
        }

        /// Worth another attempt: the network, timeouts, overload and server errors; not a request it refused.
        var isTransient: Bool {
            switch self {
            case .unreachable: true
            case .status(let code): code == 408 || code == 429 || code >= 500
            case .badResponse: false
            }
        }
    }

    public let baseURL: URL
    public let options: Options
    private let session: URLSession

    /// `baseURL` must be an absolute http or https URL.
    public init(baseURL: URL, options: Options = Options()) throws(CommandLineOptions.UsageError) {
        guard let scheme = baseURL.scheme?.lowercased(), scheme == "http" || scheme == "https", baseURL.host != nil
        else {
            throw CommandLineOptions.UsageError(
                "platform URL must be an absolute http:// or https:// URL, got \"\(baseURL.absoluteString)\"")
        }
        self.baseURL = baseURL
        self.options = options
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = options.requestTimeout
        configuration.timeoutIntervalForResource = options.requestTimeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    public func settings(applicationID: String) async throws -> DetectionSettings {
        var components = URLComponents(url: endpoint("v1/settings"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "applicationID", value: applicationID)]
        var request = URLRequest(url: components.url!)
        request.httpMethod = "GET"
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let body = try await send(request)
        do {
            return try JSONDecoder().decode(DetectionSettings.self, from: body)
        } catch {
            throw Failure.badResponse("settings: \(error)")
        }
    }

    public func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict {
        var request = URLRequest(url: endpoint("v1/crash-evaluations"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = try JSONEncoder().encode(candidate)
        let body = try await send(request)
        guard case .string(let name)? = (try? JSONParser.parse([UInt8](body)))?["verdict"] else {
            throw Failure.badResponse(
                "crash evaluation: expected {\"verdict\": \"high\" | \"medium\" | \"low\" | \"none\"}")
        }
        guard let verdict = CrashVerdict(rawValue: name) else {
            throw Failure.badResponse("crash evaluation: unknown verdict \"\(name)\"")
        }
        return verdict
    }

    private func endpoint(_ path: String) -> URL {
        let base = baseURL.absoluteString.hasSuffix("/") ? baseURL : URL(string: baseURL.absoluteString + "/")!
        return URL(string: path, relativeTo: base)!.absoluteURL
    }

    /// One request with retries; throws the last failure when every attempt failed.
    private func send(_ request: URLRequest) async throws -> Data {
        var delay = options.initialBackoff
        var lastFailure = Failure.unreachable("no attempt made")
        for attempt in 1...max(1, options.attempts) {
            do {
                let (data, response) = try await session.data(for: request)
                guard let http = response as? HTTPURLResponse else { throw Failure.badResponse("not HTTP") }
                guard (200..<300).contains(http.statusCode) else { throw Failure.status(http.statusCode) }
                return data
            } catch let failure as Failure {
                lastFailure = failure
            } catch {
                lastFailure = .unreachable(error.localizedDescription)
            }
            guard lastFailure.isTransient, attempt < options.attempts else { break }
            try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            delay *= 2
        }
        throw lastFailure
    }
}
