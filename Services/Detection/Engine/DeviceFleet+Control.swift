import RoadSaveModel

/// Control commands: what a command does to the devices it names.
extension DeviceFleet {
    /// A control command (PROTOCOL §7) at the shell's clock `now`. `fetch` is the settings fetch the shell did first
    /// when `request.needsSettings` (nil otherwise). Targets: the user given, else every known device of the
    /// application in device order (`noDevices` when there is none); the first refusal stops the command.
    public mutating func control(
        _ request: ControlRequest, now: Double,
        fetch: SettingsFetch?
    ) -> (outcome: ControlOutcome, actions: [FleetAction]) {
        var actions: [FleetAction] = []
        if case .fetched = fetch {
            // The answer serves auto-monitor too: records waiting for this application go on now.
            actions += settingsFetched(app: request.app, fetch!, now: now)
        }
        let targets: [DeviceID]
        if let user = request.user {
            targets = [DeviceID(app: request.app, user: user)]
        } else {
            targets = devices.lazy.map(\.device).filter { $0.app == request.app }.sorted()
            guard !targets.isEmpty else {
                return (
                    .failure(code: "noDevices", message: "no device of that application is known yet", device: nil),
                    actions
                )
            }
        }
        var states: [ControlDeviceState] = []
        for device in targets {
            let slot = slot(for: device)
            let t = devices[slot].eventTime(now: now)
            var session = devices[slot].session
            do {
                let result: [DetectionAction]
                switch request.command {
                case .configure:
                    let configuration = RoadSaveConfiguration(
                        applicationID: device.app, clientUserID: device.user,
                        detectionMode: request.detectionMode ?? .all,
                        shouldAutoDetectTrips: request.shouldAutoDetectTrips ?? true)
                    result = try session.configure(configuration, at: t)
                case .startMonitoring:
                    result = try session.startMonitoring(at: t, fetch: fetch ?? .unreachable)
                case .stopMonitoring:
                    result = try session.stopMonitoring(at: t)
                case .setAutoTripDetection:
                    result = try session.setAutoTripDetection(request.enabled ?? true, at: t, fetch: fetch)
                case .setDetectionMode:
                    result = try session.setDetectionMode(request.detectionMode ?? .all, at: t)
                case .raiseTestCrash:
                    result = try session.raiseTestCrash(at: t, followUp: request.followUp ?? false)
                }
                devices[slot].session = session
                shareSettings(slot: slot)
                if devices[slot].lastEventTime == nil {
                    devices[slot].lastEventTime = t
                    devices[slot].lastArrival = now
                }
                if session.lifecycle == .monitoring { devices[slot].notMonitoredReported = false }
                perform(result, slot: slot, into: &actions)
                states.append(ControlDeviceState(devices[slot].session))
            } catch {
                // A refused call may still have let time pass in the session (`advance(to:)` runs first in some).
                devices[slot].session = session
                return (.failure(code: error.code, message: error.message, device: device), actions)
            }
        }
        return (.ok(devices: targets, states: states), actions)
    }
}
