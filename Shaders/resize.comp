#version 450
// Resize of the W and H axes (the batch and channel axes unchanged).
//
// One invocation per output texel. The table holds, per output column and
// then per output row, two vec4s: up to 4 input indices and their weights
// (`taps` of them used: 1 nearest, 2 linear, 4 cubic). The texel is the
// weighted sum over the row taps of the weighted sums over the column taps;
// an entry whose first index is -1 lies outside the input
// (tf_crop_and_resize) and gives the extrapolation value.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(std430, binding = 2) readonly buffer Table { vec4 table[]; };
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint inWidth; uint inHeight;
    uint taps; uint heightTable;
    float extrapolation;
} shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint ex = id.x, ey = shape.heightTable + id.y;
    vec4 ix = table[2u * ex], wx = table[2u * ex + 1u];
    vec4 iy = table[2u * ey], wy = table[2u * ey + 1u];
    vec4 result;
    if (ix.x < 0.0 || iy.x < 0.0) {
        result = mix(vec4(0.0), vec4(shape.extrapolation), lk_channel_lanes(id.z % shape.slices, shape.channels));
    } else {
        // Padding lanes of the input are zero, so they sum to zero.
        result = vec4(0.0);
        for (uint j = 0u; j < shape.taps; j++) {
            vec4 row = vec4(0.0);
            for (uint i = 0u; i < shape.taps; i++) {
                row += wx[i] * imageLoad(source, ivec3(int(ix[i]), int(iy[j]), int(id.z)));
            }
            result += wy[j] * row;
        }
    }
    imageStore(destination, ivec3(id), lk_round_half(result));
}
