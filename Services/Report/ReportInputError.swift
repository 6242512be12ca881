/// Input the report cannot use: which file, where in it (line or record), which field, why.
public struct ReportInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    /// "line" (NDJSON) or "record" (MessagePack), with `number`.
    public var numberName: String
    public var number: Int?
    public var field: String?
    public var reason: String

    public init(path: String, numberName: String = "line", number: Int? = nil, field: String? = nil, reason: String) {
        self.path = path
        self.numberName = numberName
        self.number = number
        self.field = field
        self.reason = reason
    }

    public var description: String {
        var text = path
        if let number { text += " \(numberName) \(number)" }
        text += ": "
        if let field { text += "\(field): " }
        return text + reason
    }
}
