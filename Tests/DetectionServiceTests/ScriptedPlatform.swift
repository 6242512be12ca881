import DetectionEngine
import Foundation
import RoadSaveModel

/// A platform the test scripts: fixed settings, one verdict for every candidate (so a replay can give the same),
/// evaluations of some users held until `release()`. It notes every candidate it was asked about.
final class ScriptedPlatform: Platform, @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`.
    let fixedSettings: DetectionSettings
    let verdict: CrashVerdict
    private let lock = NSLock()
    private var heldUsers: Set<String>
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var asked: [CrashCandidate] = []

    init(settings: DetectionSettings = Streams.settings, verdict: CrashVerdict = .high, holding users: Set<String> = [])
    {
        fixedSettings = settings
        self.verdict = verdict
        heldUsers = users
    }

    func settings(applicationID: String) async throws -> DetectionSettings { fixedSettings }

    func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict {
        let held = lock.withLock {
            asked.append(candidate)
            return heldUsers.contains(candidate.user)
        }
        if held {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let runNow = lock.withLock {
                    guard heldUsers.contains(candidate.user) else { return true }
                    waiting.append(continuation)
                    return false
                }
                if runNow { continuation.resume() }
            }
        }
        return verdict
    }

    /// Lets every held evaluation (and later ones) answer.
    func release() {
        let continuations = lock.withLock {
            heldUsers.removeAll()
            defer { waiting.removeAll() }
            return waiting
        }
        for continuation in continuations { continuation.resume() }
    }

    /// The candidates asked about, in order.
    var candidates: [CrashCandidate] { lock.withLock { asked } }
}
