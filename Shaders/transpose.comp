#version 450
// Transpose of a tensor of rank <= 4 read as NCHW (lower ranks padded with
// trailing 1s, the permutation extended by the identity).
//
// One invocation per output texel. Output axis k is input axis perm[k]: each
// channel lane's output coordinate (n, c, y, x) is placed at the input axes
// the permutation names, and the lane is loaded from the input texel that
// holds it. Padding lanes stay zero.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint inWidth; uint inHeight; uint inChannels;
    uvec4 perm;
} shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint s = id.z % shape.slices;
    uint inSlices = (shape.inChannels + 3u) / 4u;
    vec4 result = vec4(0.0);
    for (uint lane = 0u; lane < 4u; lane++) {
        uint c = s * 4u + lane;
        if (c >= shape.channels) break;
        uint o[4] = uint[4](n, c, id.y, id.x);
        uint i[4] = uint[4](0u, 0u, 0u, 0u);
        for (uint k = 0u; k < 4u; k++) i[shape.perm[k]] = o[k];
        result[lane] = imageLoad(source, ivec3(i[3], i[2], i[0] * inSlices + i[1] / 4u))[i[1] % 4u];
    }
    // Lanes hold fp16 values as loaded: they store exactly.
    imageStore(destination, ivec3(id), result);
}
