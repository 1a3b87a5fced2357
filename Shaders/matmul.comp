#version 450
// A batched matrix product of two computed rank-4 values, each lane its own
// channel: out[n, c, m, p] = sum over k of a[n, c, m, k] * b[n, c, k, p],
// the matrices an image's planes (attention's Q K^T and scores · V, with
// the heads as channels). One invocation per output texel, in fp32.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray a;
layout(rgba16f, binding = 1) readonly uniform image2DArray b;
layout(rgba16f, binding = 2) writeonly uniform image2DArray destination;
// inner: K, a's width and b's height.
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; uint inner; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    vec4 sum = vec4(0.0);
    for (uint k = 0u; k < shape.inner; k++) {
        sum += imageLoad(a, ivec3(k, id.y, id.z)) * imageLoad(b, ivec3(id.x, k, id.z));
    }
    // Padding lanes hold zero in a, so they stay zero.
    imageStore(destination, ivec3(id), lk_round_half(sum));
}
