#version 450
// The ONNX Reduce ops on a slice image, in fp32.
//
// LK_REDUCE_SPATIAL 1: over each item's plane (H and W), one 8x8 workgroup
// per output layer (item, slice): its 64 invocations stride over the plane,
// four channels at a time, and combine in shared memory; the result is the
// texel (0, 0) of that layer of an N×C×1×1 output.
// LK_REDUCE_SPATIAL 0: over the channels, one invocation per output texel
// of an N×1×H×W output walking the item's slices; the result is lane 0.
// LK_REDUCE_OP: 0 sum, 1 mean, 2 max, 3 min, 4 product, 5 L1, 6 L2,
// 7 sum of squares, 8 log of the sum, 9 log-sum-exp (the maximum first).
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#ifndef LK_REDUCE_OP
#define LK_REDUCE_OP 0
#endif
#ifndef LK_REDUCE_SPATIAL
#define LK_REDUCE_SPATIAL 1
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint inWidth; uint inHeight; uint inChannels; uint inSlices;
} shape;

#if LK_REDUCE_OP == 2
#define LK_IDENTITY uintBitsToFloat(0xFF800000u)
#define LK_COMBINE(a, b) max(a, b)
#elif LK_REDUCE_OP == 3
#define LK_IDENTITY uintBitsToFloat(0x7F800000u)
#define LK_COMBINE(a, b) min(a, b)
#elif LK_REDUCE_OP == 4
#define LK_IDENTITY 1.0
#define LK_COMBINE(a, b) ((a) * (b))
#else
#define LK_IDENTITY 0.0
#define LK_COMBINE(a, b) ((a) + (b))
#endif

// What one element adds: |v| for L1, v^2 for L2 and the sum of squares,
// exp(v - shift) for log-sum-exp's second pass.
vec4 lk_term(vec4 v, vec4 shift) {
#if LK_REDUCE_OP == 5
    return abs(v);
#elif LK_REDUCE_OP == 6 || LK_REDUCE_OP == 7
    return v * v;
#elif LK_REDUCE_OP == 9
    return exp(v - shift);
#else
    return v;
#endif
}

// The accumulated value as the op's result over `count` elements.
vec4 lk_finish(vec4 acc, vec4 shift, float count) {
#if LK_REDUCE_OP == 1
    return acc / count;
#elif LK_REDUCE_OP == 6
    return sqrt(acc);
#elif LK_REDUCE_OP == 8
    return log(acc);
#elif LK_REDUCE_OP == 9
    return log(acc) + shift;
#else
    return acc;
#endif
}

// A finite maximum, else 0: exp(v - 0) then gives -inf or inf as it should.
vec4 lk_shift_of(vec4 m) { return mix(m, vec4(0.0), isinf(m)); }

#if LK_REDUCE_SPATIAL == 1
shared vec4 partial[64];

// Combines the 64 invocations' partial values; every invocation returns the result.
vec4 lk_workgroup_combine(vec4 mine, uint index, bool maximum) {
    partial[index] = mine;
    barrier();
    for (uint stride = 32u; stride > 0u; stride >>= 1) {
        if (index < stride) {
            partial[index] = maximum ? max(partial[index], partial[index + stride])
                                     : LK_COMBINE(partial[index], partial[index + stride]);
        }
        barrier();
    }
    vec4 result = partial[0];
    barrier();
    return result;
}

void main() {
    uint layer = gl_WorkGroupID.z;
    uint index = gl_LocalInvocationIndex;
    uint plane = shape.inWidth * shape.inHeight;
    vec4 shift = vec4(0.0);
#if LK_REDUCE_OP == 9
    vec4 m = vec4(uintBitsToFloat(0xFF800000u));
    for (uint t = index; t < plane; t += 64u) {
        m = max(m, imageLoad(source, ivec3(t % shape.inWidth, t / shape.inWidth, layer)));
    }
    shift = lk_shift_of(lk_workgroup_combine(m, index, true));
#endif
    vec4 acc = vec4(LK_IDENTITY);
    for (uint t = index; t < plane; t += 64u) {
        acc = LK_COMBINE(acc, lk_term(imageLoad(source, ivec3(t % shape.inWidth, t / shape.inWidth, layer)), shift));
    }
    acc = lk_workgroup_combine(acc, index, false);
    if (index == 0u && layer < shape.layers) {
        vec4 result = lk_finish(acc, shift, float(plane));
        result = mix(vec4(0.0), result, lk_channel_lanes(lk_slice_of(layer, shape.slices), shape.channels));
        imageStore(destination, ivec3(0, 0, layer), lk_round_half(result));
    }
}
#else
void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint base = id.z * shape.inSlices;  // the output has one slice per item
    float shift = 0.0;
#if LK_REDUCE_OP == 9
    float m = uintBitsToFloat(0xFF800000u);
    for (uint c = 0u; c < shape.inChannels; c++) {
        m = max(m, imageLoad(source, ivec3(id.xy, base + c / 4u))[c % 4u]);
    }
    shift = lk_shift_of(vec4(m)).x;
#endif
    float acc = LK_IDENTITY;
    for (uint c = 0u; c < shape.inChannels; c++) {
        float v = imageLoad(source, ivec3(id.xy, base + c / 4u))[c % 4u];
        acc = LK_COMBINE(acc, lk_term(vec4(v), vec4(shift)).x);
    }
    float result = lk_finish(vec4(acc), vec4(shift), float(shape.inChannels)).x;
    imageStore(destination, ivec3(id), lk_round_half(vec4(result, 0.0, 0.0, 0.0)));
}
#endif
