/// The middle value of `values` (the mean of the two middle ones for an even count), nil when there is none. Sorts
/// `values` in place: a caller that holds them in a buffer of its own (on the stack) allocates nothing.
func median<Values: MutableCollection & RandomAccessCollection>(sorting values: inout Values) -> Double?
where Values.Element == Double {
    guard !values.isEmpty else { return nil }
    values.sort()
    let middle = values.index(values.startIndex, offsetBy: values.count / 2)
    guard values.count % 2 == 0 else { return values[middle] }
    return (values[values.index(before: middle)] + values[middle]) / 2
}
