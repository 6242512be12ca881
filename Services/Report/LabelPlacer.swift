/// Places short labels beside markers without letting them cover each other: a label that would overlap one
/// already placed moves down a line until it is clear (text width is estimated, as no fonts are measured here).
struct LabelPlacer {
    private var placed: [(x: Double, y: Double, width: Double, height: Double)] = []
    let lineHeight: Double
    let characterWidth: Double

    init(lineHeight: Double = 13, characterWidth: Double = 6.2) {
        self.lineHeight = lineHeight
        self.characterWidth = characterWidth
    }

    /// The width `text` is taken to have.
    func width(of text: String) -> Double { Double(text.count) * characterWidth }

    /// The baseline for `text` whose box starts at `x` (its left edge) with its baseline at `y` if that is free.
    mutating func place(_ text: String, x: Double, y: Double) -> (x: Double, y: Double) {
        let width = width(of: text)
        var baseline = y
        for _ in 0..<20 {
            let top = baseline - lineHeight
            let overlaps = placed.contains { box in
                x < box.x + box.width && box.x < x + width && top < box.y + box.height && box.y < top + lineHeight
            }
            if !overlaps { break }
            baseline += lineHeight
        }
        placed.append((x, baseline - lineHeight, width, lineHeight))
        return (x, baseline)
    }
}
