/// A min-heap of devices by the time of their next record (ties: the lower device number first), for merging the
/// devices' streams into one file in time order.
struct DeviceHeap {
    private var heap: [(key: Int64, device: Int)] = []

    /// Every device with its first key.
    init(_ heads: [(key: Int64, device: Int)]) {
        heap = heads
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    /// The device whose record comes next, with its key.
    var first: (key: Int64, device: Int)? { heap.first }

    /// The first device's next record has `key`.
    mutating func replaceFirst(key: Int64) {
        heap[0].key = key
        siftDown(0)
    }

    /// The first device has no record left.
    mutating func removeFirst() {
        heap[0] = heap[heap.count - 1]
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private static func less(_ a: (key: Int64, device: Int), _ b: (key: Int64, device: Int)) -> Bool {
        a.key < b.key || (a.key == b.key && a.device < b.device)
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var child = left
            if left + 1 < heap.count, Self.less(heap[left + 1], heap[left]) { child = left + 1 }
            guard Self.less(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            parent = child
        }
    }
}
