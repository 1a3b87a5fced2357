import Foundation
import LayerKit

/// Copies `input` into `output` on `threads` threads: the memory-bandwidth
/// ceiling for any element-wise kernel of the same size.
package func copyTensor(_ input: Tensor, into output: Tensor, threads: Int) {
    let share = (input.count + threads - 1) / threads
    DispatchQueue.concurrentPerform(iterations: threads) { t in
        let start = min(input.count, t * share), end = min(input.count, start + share)
        (output.dataPointer + start).update(from: input.dataPointer + start, count: end - start)
    }
}
