import Foundation
import RoadSaveTestKit

// The integration tests' own pieces; the processes, ports, executables and waits come from RoadSaveTestKit.

/// The integration tests' child processes are the kit's.
typealias Child = ChildProcess

/// The Python clients in `Support/`, which drive the services with code that is not the project's.
enum SupportScripts {
    static let folder = TestPaths.target("IntegrationTests").appendingPathComponent("Support")
}

extension ChildProcess {
    /// A Python script of `Support/`.
    static func python(_ script: String, _ arguments: [String], name: String? = nil) throws -> ChildProcess {
        try python(SupportScripts.folder.appendingPathComponent(script), arguments, name: name ?? script)
    }
}

/// Lets at most `slots` holders run at once: the tests each start several processes, and this machine has 2 cores.
actor Gate {
    static let pipelines = Gate(slots: 3)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(slots: Int) {
        free = slots
    }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Runs `body` holding one of the pipeline slots.
func withPipelineSlot<T>(_ body: () async throws -> T) async throws -> T {
    await Gate.pipelines.acquire()
    do {
        let result = try await body()
        await Gate.pipelines.release()
        return result
    } catch {
        await Gate.pipelines.release()
        throw error
    }
}

/// A JSON object's member, for the tests' dictionary-shaped JSON.
extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func number(_ key: String) -> Double? { (self[key] as? NSNumber)?.doubleValue }
    func bool(_ key: String) -> Bool? {
        guard let number = self[key] as? NSNumber else { return self[key] as? Bool }
        // JSONSerialization gives booleans as NSNumber; only true/false come from a JSON boolean here.
        return number.boolValue
    }
}

/// Serialises a JSON object with sorted keys (one line).
func jsonLine(_ object: Any) -> String {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return String(decoding: data, as: UTF8.self)
}
