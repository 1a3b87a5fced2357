import Foundation

/// `layerkit train --plot loss.svg`: the loss of every mini-batch and the
/// mean of each epoch against the epoch (mini-batch `j` of `B` in epoch `e`
/// at `e - 1 + (j + 1) / B`, the epoch's mean at `e`), on a log loss axis.
enum LossPlot {
    /// One epoch's losses, in the order its mini-batches ran.
    struct Epoch {
        /// The epoch's number, from 1 (a resumed run goes on from the checkpoint's).
        let number: Int
        var batchLosses: [Double]
        /// The epoch's mean loss as the trainer reports it.
        var mean: Double
        /// The epoch's wall time.
        var seconds: Double = 0
    }

    /// The picture of `epochs`; `title` names the model and the loss, `subtitle` the settings.
    static func svg(_ epochs: [Epoch], title: String, subtitle: [String], lossName: String) -> String {
        var batches: [(x: Double, y: Double)] = []
        for epoch in epochs {
            let count = Double(epoch.batchLosses.count)
            for (j, loss) in epoch.batchLosses.enumerated() {
                batches.append((Double(epoch.number - 1) + Double(j + 1) / count, loss))
            }
        }
        let means = epochs.map { (x: Double($0.number), y: $0.mean) }
        let first = (epochs.first?.number ?? 1) - 1, last = epochs.last?.number ?? 1
        // At most about 12 labelled epochs.
        let every = max(1, Int((Double(last - first) / 12).rounded(.up)))
        let ticks = stride(from: first, through: last, by: every).map { (x: Double($0), label: "\($0)") }
        // A log axis has no place for 0 (nor for infinity).
        let drawable = { (point: (x: Double, y: Double)) in point.y > 0 && point.y.isFinite }
        let skipped = (batches + means).filter { !drawable($0) }.count
        var notes = ["thin line: the loss of each mini-batch; dots: each epoch's mean (the loss axis is logarithmic)"]
        if skipped > 0 { notes.append("\(skipped) losses of 0 or infinity are not drawn (no place on a log axis)") }
        return SVGLinePlot(
            title: title, subtitle: subtitle,
            xLabel: "epoch", yLabel: "\(lossName) loss",
            xTicks: ticks, xLogarithmic: false,
            series: [SVGLinePlot.Series(label: "mini-batch loss", color: "#9ecae1", markers: false, lineWidth: 1.2,
                                        points: batches.filter(drawable)),
                     SVGLinePlot.Series(label: "epoch mean", color: "#d62728", points: means.filter(drawable))],
            notes: notes
        ).svg()
    }
}
