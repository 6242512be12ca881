import Wire

extension RoadSaveSubscriber {
    /// The events of one subscription, as an `AsyncSequence` of `Delivery` that throws `RoadSaveClientError`. Making
    /// its iterator starts the subscription (a thread of its own); cancelling the iterating task, or dropping the
    /// iterator, ends it.
    public struct Deliveries: AsyncSequence, Sendable {
        /// One event with its position.
        public typealias Element = Delivery
        /// What ends a subscription that cannot go on.
        public typealias Failure = RoadSaveClientError

        let settings: SubscriberEngine.Settings
        let start: CatchUpRequest.Start?
        let notices: (@Sendable (SubscriberNotice) -> Void)?
        /// Deliveries handed over and not yet taken, at most (the engine waits beyond).
        static let capacity = 256

        /// Starts the subscription.
        public func makeAsyncIterator() -> AsyncIterator {
            let (stream, continuation) = AsyncThrowingStream<Delivery, any Error>.makeStream()
            let handoff = DeliveryHandoff(capacity: Self.capacity, continuation: continuation)
            continuation.onTermination = { _ in handoff.cancel() }
            SubscriberEngine.start(settings, from: start, handoff: handoff, notices: notices)
            return AsyncIterator(base: stream.makeAsyncIterator(), handoff: handoff)
        }

        /// The iterator of one subscription.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<Delivery, any Error>.AsyncIterator
            let handoff: DeliveryHandoff

            /// The next delivery; nil once the subscription ended (its task cancelled).
            public mutating func next() async throws(RoadSaveClientError) -> Delivery? {
                try await next(isolation: nil)
            }

            /// The next delivery, awaited in `actor`'s isolation; nil once the subscription ended.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(RoadSaveClientError)
                -> Delivery?
            {
                do {
                    guard let delivery = try await base.next(isolation: actor) else { return nil }
                    handoff.taken()
                    return delivery
                } catch let error as RoadSaveClientError {
                    throw error
                } catch {
                    throw .closed
                }
            }
        }
    }
}
