#version 450
// ONNX InstanceNormalization on a slice image, in fp32:
// y = scale[c] * (x - mean) / sqrt(variance + epsilon) + bias[c], the mean
// and variance over each item's channel plane (H and W). With perPosition,
// LayerNormalization over the plane: y = (x - mean) / sqrt(variance + epsilon)
// * scale[t] + bias[t], t the texel's place in the plane (a [B, S, D] tensor
// normalized over D is B items of S channels, each an H = D plane). With
// perRow as well, over each row of the plane alone, t the texel's place in
// its row (channels-last [B, H, W, C] normalized over C, as ConvNeXt's and
// Swin's LayerNorm: C runs along the image's W).
//
// One 8x8 workgroup per array layer (an item's slice, four channels), or
// per row of one with perRow: its 64 invocations stride over the plane (the
// row) and combine in shared memory, first the sum (the mean), then the sum
// of (x - mean)^2 (the variance, as E[(x - mean)^2]), then each writes its
// texels.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
// Per channel: scale for slice s at [s], bias at [slices + s]; zero past the
// last channel. Per position: (scale, bias, 0, 0) of texel t at [t].
layout(std430, binding = 2) readonly buffer Weights { vec4 weights[]; };
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; float epsilon; uint perPosition; uint perRow; } shape;

shared vec4 partial[64];

vec4 lk_workgroup_sum(vec4 mine, uint index) {
    partial[index] = mine;
    barrier();
    for (uint stride = 32u; stride > 0u; stride >>= 1) {
        if (index < stride) partial[index] += partial[index + stride];
        barrier();
    }
    vec4 result = partial[0];
    barrier();
    return result;
}

void main() {
    // With perRow, workgroup z is (layer, row) and the "plane" that row.
    uint layer = shape.perRow == 0u ? gl_WorkGroupID.z : gl_WorkGroupID.z / shape.height;
    uint firstRow = shape.perRow == 0u ? 0u : gl_WorkGroupID.z % shape.height;
    uint index = gl_LocalInvocationIndex;
    uint plane = shape.perRow == 0u ? shape.width * shape.height : shape.width;
    vec4 sum = vec4(0.0);
    for (uint t = index; t < plane; t += 64u) {
        sum += imageLoad(source, ivec3(t % shape.width, firstRow + t / shape.width, layer));
    }
    vec4 mean = lk_workgroup_sum(sum, index) / float(plane);
    vec4 squares = vec4(0.0);
    for (uint t = index; t < plane; t += 64u) {
        vec4 d = imageLoad(source, ivec3(t % shape.width, firstRow + t / shape.width, layer)) - mean;
        squares += d * d;
    }
    vec4 variance = lk_workgroup_sum(squares, index) / float(plane);
    if (layer >= shape.layers) return;
    uint slice = lk_slice_of(layer, shape.slices);
    vec4 inverse = inversesqrt(variance + shape.epsilon);
    // Per channel: one multiplier and offset for the slice (read only then: a
    // per-position buffer holds the plane's texels, not the slices).
    vec4 a = vec4(0.0), b = vec4(0.0);
    if (shape.perPosition == 0u) {
        a = weights[slice] * inverse;
        b = weights[shape.slices + slice];
    }
    bvec4 lanes = lk_channel_lanes(slice, shape.channels);
    for (uint t = index; t < plane; t += 64u) {
        ivec3 at = ivec3(t % shape.width, firstRow + t / shape.width, layer);
        vec4 y = shape.perPosition == 0u ? (imageLoad(source, at) - mean) * a + b
                                         : (imageLoad(source, at) - mean) * inverse * weights[t].x + weights[t].y;
        imageStore(destination, at, lk_round_half(mix(vec4(0.0), y, lanes)));
    }
}
