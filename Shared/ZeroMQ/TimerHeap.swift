/// A binary min-heap of timer deadlines, ties broken by id (i.e. scheduling order).
struct TimerHeap {
    private var items: [(deadline: Double, id: UInt64)] = []

    var count: Int { items.count }
    var top: (deadline: Double, id: UInt64)? { items.first }

    private static func less(_ a: (deadline: Double, id: UInt64), _ b: (deadline: Double, id: UInt64)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    mutating func push(deadline: Double, id: UInt64) {
        items.append((deadline, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        siftDown(from: 0)
    }

    mutating func rebuild(from entries: [(deadline: Double, id: UInt64)]) {
        items = entries
        var index = items.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && Self.less(items[left], items[smallest]) { smallest = left }
            if right < items.count && Self.less(items[right], items[smallest]) { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
