#version 450
// A computed value's rows times constant weights: out[..., m, n] = bias[n] +
// sum over k of a[..., m, k] * w[k, n], w (alpha-scaled B') and bias in a
// buffer in fp32, as a transformer's Linear layers (MatMul by an
// initializer, then Add of one) are exported. The weights of such a layer
// ([768, 3072] in BERT-base) are far more texels than an image's array
// layers hold, so they are read from a buffer rather than an image.
//
// The rows sit in the image in one of two ways, by the rank of a:
// - rank 4, [B, C, M, K]: each plane is a matrix, K along W; one invocation
//   per output texel (n, m, layer), its lanes four channels' rows.
// - rank 3, [B, M, K]: M is the channel axis and K runs along H (W is 1);
//   one invocation per (n, layer), its lanes four rows m.
// Either way each texel of a is multiplied by one scalar weight, in fp32.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
// w as [K, N] row-major, then N bias values.
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
// The output's shape; inner: K; columns: N; alongHeight: 1 for rank 3.
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; uint inner; uint columns; uint alongHeight; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    bool alongHeight = shape.alongHeight != 0u;
    // Rank 3 runs one invocation per (n, layer): x is n, y the layer.
    uint n = id.x;
    uint m = alongHeight ? 0u : id.y;
    uint layer = alongHeight ? id.y : id.z;
    if (n >= shape.columns || layer >= shape.layers || (alongHeight ? id.z != 0u : m >= shape.height)) return;
    vec4 sum = vec4(weights[shape.inner * shape.columns + n]);
    for (uint k = 0u; k < shape.inner; k++) {
        ivec3 at = alongHeight ? ivec3(0u, k, layer) : ivec3(k, m, layer);
        sum += imageLoad(source, at) * weights[k * shape.columns + n];
    }
    // Padding lanes hold zero in a but would get the bias: keep them zero.
    bvec4 lanes = lk_channel_lanes(lk_slice_of(layer, shape.slices), shape.channels);
    ivec3 at = alongHeight ? ivec3(0u, n, layer) : ivec3(n, m, layer);
    imageStore(destination, at, lk_round_half(mix(vec4(0.0), sum, lanes)));
}
