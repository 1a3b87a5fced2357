import CKernels

/// The channel planes of an `[N, C, ...]` tensor: channel c of image n is
/// the `plane` elements from `(n * channels + c) * plane`.
struct ChannelPlanes {
    let batch: Int, channels: Int, plane: Int

    init(_ shape: [Int]) {
        (batch, channels) = (shape[0], shape[1])
        plane = shape.dropFirst(2).reduce(1, *)
    }

    /// The elements a channel holds over the batch.
    var perChannel: Int { batch * plane }

    /// `body(n, c, start)` for every plane, `start` its first element's index.
    func forEachPlane(_ body: (_ n: Int, _ c: Int, _ start: Int) -> Void) {
        for n in 0..<batch {
            for c in 0..<channels { body(n, c, (n * channels + c) * plane) }
        }
    }

    /// Per channel c, in Double: the sum of `t`'s elements.
    func sums(_ t: Tensor) -> [Double] {
        var result = [Double](repeating: 0, count: channels)
        forEachPlane { _, c, start in result[c] += lk_sum_f32(t.dataPointer + start, plane) }
        return result
    }

    /// Per channel c, in Double: the sum of `a[i] * b[i]`, each product exact.
    func dots(_ a: Tensor, _ b: Tensor) -> [Double] {
        var result = [Double](repeating: 0, count: channels)
        forEachPlane { _, c, start in result[c] += lk_dot_f32(a.dataPointer + start, b.dataPointer + start, plane) }
        return result
    }

    /// Per channel c, in Double: sum(g) and sum(g * (x - center) * factor),
    /// `(center, factor)` given per channel by `normalization`.
    func sums(_ g: Tensor, _ x: Tensor, normalization: (Int) -> (center: Double, factor: Double))
        -> [(gradient: Double, gradientTimesNormalized: Double)] {
        let norms = (0..<channels).map(normalization)
        var result = [(gradient: Double, gradientTimesNormalized: Double)](repeating: (0, 0), count: channels)
        forEachPlane { _, c, start in
            let (center, factor) = norms[c]
            var (sum, product) = (0.0, 0.0)
            for i in start..<start + plane {
                let gi = Double(g.dataPointer[i])
                sum += gi
                product += gi * (Double(x.dataPointer[i]) - center)
            }
            result[c].gradient += sum
            result[c].gradientTimesNormalized += product * factor
        }
        return result
    }
}
