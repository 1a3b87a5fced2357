import Foundation

/// A line chart on log-log axes (or a linear x axis: `xLogarithmic`) as a
/// standalone SVG file: title, axes with labelled ticks and grid, one
/// polyline with markers per series, a legend, and notes under the plot.
/// No dependencies.
struct SVGLinePlot {
    struct Series {
        let label: String
        /// A CSS colour.
        let color: String
        var dashed = false
        /// Whether each point gets a dot (never on a dashed line).
        var markers = true
        /// The line's stroke width.
        var lineWidth = 2.5
        /// Points with positive y, and positive x on a log x axis (others are skipped).
        let points: [(x: Double, y: Double)]
    }

    var title: String
    var subtitle: [String] = []
    var xLabel: String
    var yLabel: String
    /// Tick positions on x with their labels.
    var xTicks: [(x: Double, label: String)]
    /// Whether x is drawn on a log scale (else linear, from the smallest x to the largest).
    var xLogarithmic = true
    var series: [Series]
    var notes: [String] = []

    private let width = 1000.0, plotLeft = 90.0, plotWidth = 600.0, plotTop = 110.0, plotHeight = 420.0

    /// The SVG document.
    func svg() -> String {
        let xs = xTicks.map(\.x) + series.flatMap { $0.points.map(\.x) }
        let ys = series.flatMap { $0.points.map(\.y) }.filter { $0 > 0 }
        func xScale(_ x: Double) -> Double { xLogarithmic ? log10(x) : x }
        let xRange = xLogarithmic ? (log10(xs.filter { $0 > 0 }.min() ?? 1), log10(xs.max() ?? 10))
            : (xs.min() ?? 0, xs.max() ?? 1)
        let yRange = (floor(log10(ys.min() ?? 1)), ceil(log10(ys.max() ?? 10)))
        func px(_ x: Double) -> Double {
            plotLeft + (xScale(x) - xRange.0) / max(xRange.1 - xRange.0, 1e-9) * plotWidth
        }
        func py(_ y: Double) -> Double {
            plotTop + plotHeight - (log10(y) - yRange.0) / max(yRange.1 - yRange.0, 1e-9) * plotHeight
        }
        let height = plotTop + plotHeight + 80 + Double(notes.count) * 20
        var out = [
            #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(f(width))" height="\#(f(height))" "#
                + #"viewBox="0 0 \#(f(width)) \#(f(height))" font-family="Helvetica, Arial, sans-serif" font-size="13">"#,
            #"<rect width="100%" height="100%" fill="white"/>"#,
            text(title, x: plotLeft, y: 30, attributes: #"font-size="18" font-weight="bold""#),
        ]
        for (i, line) in subtitle.enumerated() {
            out.append(text(line, x: plotLeft, y: 52 + Double(i) * 18, attributes: #"fill="rgb(68,68,68)""#))
        }
        // Grid and y ticks: 1, 2, 5 per decade.
        var decade = yRange.0
        while decade <= yRange.1 {
            for step in [1.0, 2.0, 5.0] {
                let value = step * pow(10, decade)
                guard log10(value) <= yRange.1 + 1e-9 else { continue }
                let y = py(value)
                out.append(line(plotLeft, y, plotLeft + plotWidth, y, stroke: step == 1 ? "#bbb" : "#e4e4e4"))
                out.append(text(label(value), x: plotLeft - 8, y: y + 4, attributes: #"text-anchor="end""#))
            }
            decade += 1
        }
        for tick in xTicks {
            let x = px(tick.x)
            out.append(line(x, plotTop, x, plotTop + plotHeight, stroke: "#e4e4e4"))
            out.append(text(tick.label, x: x, y: plotTop + plotHeight + 20, attributes: #"text-anchor="middle""#))
        }
        out.append(#"<rect x="\#(f(plotLeft))" y="\#(f(plotTop))" width="\#(f(plotWidth))" height="\#(f(plotHeight))" fill="none" stroke="rgb(51,51,51)"/>"#)
        out.append(text(xLabel, x: plotLeft + plotWidth / 2, y: plotTop + plotHeight + 45, attributes: #"text-anchor="middle""#))
        let yMid = plotTop + plotHeight / 2
        out.append(text(yLabel, x: 24, y: yMid, attributes: #"text-anchor="middle" transform="rotate(-90 24 \#(f(yMid)))""#))
        for (i, s) in series.enumerated() {
            let points = s.points.filter { (!xLogarithmic || $0.x > 0) && $0.y > 0 }
            let path = points.map { "\(f(px($0.x))),\(f(py($0.y)))" }.joined(separator: " ")
            let dash = s.dashed ? #" stroke-dasharray="7 5""# : ""
            out.append(#"<polyline points="\#(path)" fill="none" stroke="\#(s.color)" stroke-width="\#(f(s.lineWidth))"\#(dash)/>"#)
            for p in points where !s.dashed && s.markers {
                out.append(#"<circle cx="\#(f(px(p.x)))" cy="\#(f(py(p.y)))" r="3.5" fill="\#(s.color)"/>"#)
            }
            let ly = plotTop + 12 + Double(i) * 24
            let lx = plotLeft + plotWidth + 20
            out.append(#"<line x1="\#(f(lx))" y1="\#(f(ly))" x2="\#(f(lx + 28))" y2="\#(f(ly))" stroke="\#(s.color)" stroke-width="2.5"\#(dash)/>"#)
            out.append(text(s.label, x: lx + 36, y: ly + 4))
        }
        for (i, note) in notes.enumerated() {
            out.append(text(note, x: plotLeft, y: plotTop + plotHeight + 72 + Double(i) * 20, attributes: #"fill="rgb(51,51,51)""#))
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    private func text(_ content: String, x: Double, y: Double, attributes: String = "") -> String {
        #"<text x="\#(f(x))" y="\#(f(y))" \#(attributes)>\#(escape(content))</text>"#
    }

    private func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String) -> String {
        #"<line x1="\#(f(x1))" y1="\#(f(y1))" x2="\#(f(x2))" y2="\#(f(y2))" stroke="\#(stroke)"/>"#
    }

    private func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// 0.01, 0.5, 2, 100 ...: a tick value without trailing zeros.
    private func label(_ value: Double) -> String {
        value >= 1 ? String(format: "%.0f", value) : String(format: "%g", value)
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
