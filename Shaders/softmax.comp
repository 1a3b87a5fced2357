#version 450
// Softmax, LogSoftmax or Hardmax along the channel axis of a slice image.
//
// One invocation per (x, y, batch item): it walks the item's slices once
// for the maximum, once for the sum of exp(v - max), then writes every
// slice, in fp32. Padding lanes take no part and stay zero.
// LK_SOFTMAX_KIND: 0 softmax, 1 log softmax, 2 hardmax (1 at the first
// largest channel).
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#ifndef LK_SOFTMAX_KIND
#define LK_SOFTMAX_KIND 0
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z * shape.slices >= shape.layers) return;
    uint base = id.z * shape.slices;
#if LK_SOFTMAX_KIND == 2
    float m = uintBitsToFloat(0xFF800000u);
    uint best = 0u;
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 v = imageLoad(source, ivec3(id.xy, base + s));
        for (uint lane = 0u; lane < 4u; lane++) {
            uint c = s * 4u + lane;
            if (c < shape.channels && (c == 0u || v[lane] > m)) { m = v[lane]; best = c; }
        }
    }
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 e = vec4(equal(uvec4(s * 4u) + uvec4(0u, 1u, 2u, 3u), uvec4(best)));
        imageStore(destination, ivec3(id.xy, base + s), e);
    }
#else
    float m = uintBitsToFloat(0xFF800000u);
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 v = mix(vec4(m), imageLoad(source, ivec3(id.xy, base + s)), lk_channel_lanes(s, shape.channels));
        m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
    }
    float sum = 0.0;
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 e = mix(vec4(0.0), exp(imageLoad(source, ivec3(id.xy, base + s)) - m), lk_channel_lanes(s, shape.channels));
        sum += e.x + e.y + e.z + e.w;
    }
#if LK_SOFTMAX_KIND == 1
    float logSum = log(sum);
#endif
    for (uint s = 0u; s < shape.slices; s++) {
#if LK_SOFTMAX_KIND == 1
        vec4 e = (imageLoad(source, ivec3(id.xy, base + s)) - m) - logSum;
#else
        vec4 e = exp(imageLoad(source, ivec3(id.xy, base + s)) - m) / sum;
#endif
        e = mix(vec4(0.0), e, lk_channel_lanes(s, shape.channels));
        imageStore(destination, ivec3(id.xy, base + s), lk_round_half(e));
    }
#endif
}
