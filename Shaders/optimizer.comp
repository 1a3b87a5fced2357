#version 450
// One optimizer step on Float32 storage buffers, element by element, as
// torch.optim computes it (OptimizerConfiguration.Algorithm documents the
// formulas): SGD with weight decay, momentum, dampening and Nesterov; Adam
// with L2 weight decay; AdamW with decoupled decay. Parameters and state
// stay Float32 (no fp16 image anywhere). Every variable is `precise`, so no
// multiply-add is fused: the operations and their order are those of the
// CPU twin (Training/OptimizerUpdate.swift), which must give the same bits
// or within an ulp of a division or square root.
//
// One dispatch per parameter: its `count` elements start at `offset` in
// every buffer; invocation (x, y) updates element y * rowLength + x.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(std430, binding = 0) buffer Parameters { float parameters[]; };
layout(std430, binding = 1) readonly buffer Gradients { float gradients[]; };
// SGD's momentum buffer, or Adam's exp_avg.
layout(std430, binding = 2) buffer FirstMoments { float first[]; };
// Adam's exp_avg_sq (unused by SGD).
layout(std430, binding = 3) buffer SecondMoments { float second[]; };
layout(push_constant) uniform Constants {
    uint offset; uint count; uint rowLength; uint algorithm; uint flags;
    float negativeLearningRate; float weightDecay; float momentum; float dampeningComplement;
    float firstMomentWeight; float beta2; float secondMomentWeight; float biasCorrection2Sqrt;
    float epsilon; float negativeStepSize; float decayFactor;
} c;

// flags (OptimizerConstants.Flags)
const uint WEIGHT_DECAY = 1u;
const uint MOMENTUM = 2u;
const uint FIRST_STEP = 4u;
const uint NESTEROV = 8u;

void main() {
    uint index = gl_GlobalInvocationID.y * c.rowLength + gl_GlobalInvocationID.x;
    if (gl_GlobalInvocationID.x >= c.rowLength || index >= c.count) return;
    uint i = c.offset + index;
    precise float p = parameters[i];
    precise float g = gradients[i];
    if (c.algorithm == 0u) {
        if ((c.flags & WEIGHT_DECAY) != 0u) g = g + c.weightDecay * p;
        if ((c.flags & MOMENTUM) != 0u) {
            precise float b = g;
            if ((c.flags & FIRST_STEP) == 0u) b = first[i] * c.momentum + c.dampeningComplement * g;
            first[i] = b;
            if ((c.flags & NESTEROV) != 0u) g = g + c.momentum * b; else g = b;
        }
        p = p + c.negativeLearningRate * g;
    } else {
        if ((c.flags & WEIGHT_DECAY) != 0u) {
            if (c.algorithm == 2u) p = p * c.decayFactor; else g = g + c.weightDecay * p;
        }
        precise float m = first[i];
        precise float w = c.firstMomentWeight;
        // torch.lerp's two forms, by the weight.
        if (w < 0.5) m = m + w * (g - m); else m = g - (g - m) * (1.0 - w);
        precise float v = second[i] * c.beta2 + c.secondMomentWeight * g * g;
        precise float denominator = sqrt(v) / c.biasCorrection2Sqrt + c.epsilon;
        p = p + c.negativeStepSize * (m / denominator);
        first[i] = m;
        second[i] = v;
    }
    parameters[i] = p;
}
