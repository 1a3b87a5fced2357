import Foundation
import LayerKit
import LayerKitCommands

/// What loading costs: the time `Model(...)` takes (decode, import, and the
/// prepare phase: pipelines, images, staging buffers, constant uploads) and
/// the time of the first `predict` after it, as medians over `loads` fresh
/// models on one device, beside the `cold` first load of the process (which
/// also compiles the shaders).
struct LoadTimes: Codable {
    let coldLoadMs: Double, coldFirstPredictMs: Double
    let loadMs: Double, firstPredictMs: Double
}

func loadTimes(cold: (load: Duration, firstPredict: Duration), loads: Int, inputs: [String: Tensor],
               load: () throws -> Model) throws -> LoadTimes {
    var loadSamples: [Double] = []
    var firstSamples: [Double] = []
    for _ in 0..<max(1, loads) {
        let start = ContinuousClock.now
        let model = try load()
        let loaded = ContinuousClock.now
        _ = try model.predict(inputs: inputs)
        let predicted = ContinuousClock.now
        loadSamples.append(Timing.milliseconds(loaded - start))
        firstSamples.append(Timing.milliseconds(predicted - loaded))
    }
    func median(_ values: [Double]) -> Double { values.sorted()[(values.count - 1) / 2] }
    return LoadTimes(coldLoadMs: Timing.milliseconds(cold.load), coldFirstPredictMs: Timing.milliseconds(cold.firstPredict),
                     loadMs: median(loadSamples), firstPredictMs: median(firstSamples))
}
