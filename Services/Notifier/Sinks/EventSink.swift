import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where events go (DESIGN-NOTES, "Output adapters behind one small protocol"): the notifier hands every event to each
/// configured sink, and the sinks own delivery: queueing, retries, ordering and what is left at shutdown.
///
/// Implementations are thread-safe (actors or locked classes), and `deliver` never blocks the caller's thread: it
/// returns once the event is accepted (queued), and the slow work (HTTP, `write(2)`) happens elsewhere.
public protocol EventSink: Sendable {
    /// For logs, e.g. `webhook(https://hooks.example.com/ho…ve)`; never carries a credential.
    var name: String { get }
    /// Takes an event for delivery. Returns when it is accepted (queued), not when delivered.
    func deliver(_ event: RoadSaveEvent) async
    /// Finishes what is in hand (bounded by `deadline` seconds) and stops; returns how many were left undelivered.
    /// Events handed over after shutdown began are refused (logged and counted), not delivered.
    func shutdown(deadline: Double) async -> Int
}

/// A FIFO with O(1) append and pop at the front.
struct Ring<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }
    var first: Element? { isEmpty ? nil : storage[head] }

    subscript(index: Int) -> Element {
        get { storage[head + index] }
        set { storage[head + index] = newValue }
    }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }

    var elements: ArraySlice<Element> { storage[head...] }
}
