import LayerKit

/// The end of `layerkit train`'s report: where each kind of training work
/// ran, from the trainer's placement report (`UpdateTask.placementReport`:
/// every step's forward and backward work, the loss and the optimizer step,
/// once each in the order first run), one line each, the forward layers
/// counted in one line per placement (a model's hundred layers are one
/// line); a CPU line off `--backend cpu` says why it is not on the GPU.
enum PlacementSummary {
    /// A heading with the counts, then one line per entry: op, work, `GPU` or `CPU (reason)`.
    static func lines(_ full: [TrainingWork]) -> [String] {
        var report = full.filter { $0.work != "forward" }
        var forward: [(placement: Placement, layers: Int)] = []
        for entry in full where entry.work == "forward" {
            if let i = forward.firstIndex(where: { $0.placement == entry.placement }) {
                forward[i].layers += 1
            } else {
                forward.append((entry.placement, 1))
            }
        }
        report.insert(contentsOf: forward.map {
            TrainingWork(op: "forward", work: "\($0.layers) layer\($0.layers == 1 ? "" : "s")", placement: $0.placement)
        }, at: 0)
        let gpu = report.filter { $0.placement.isGPU }.count
        var lines = ["training work: \(report.count) kind\(report.count == 1 ? "" : "s"), \(gpu) on the GPU, "
                     + "\(report.count - gpu) on the CPU"]
        let opWidth = min(40, report.map(\.op.count).max() ?? 0), workWidth = min(40, report.map(\.work.count).max() ?? 0)
        for entry in report {
            let place: String
            switch entry.placement {
            case .gpu: place = "GPU"
            case .cpu(let reason?): place = "CPU (\(reason))"
            case .cpu(nil): place = "CPU"
            }
            lines.append("  " + entry.op.padding(toLength: max(opWidth, entry.op.count), withPad: " ", startingAt: 0)
                         + "  " + entry.work.padding(toLength: max(workWidth, entry.work.count), withPad: " ", startingAt: 0)
                         + "  " + place)
        }
        return lines
    }
}
