#version 450
// Reshape between slice images of the same element count.
//
// One invocation per output texel. Each channel lane's row-major NCHW index
// in the output is the same index in the input; the lane is loaded from the
// input texel holding it. Padding lanes stay zero.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint inWidth; uint inHeight; uint inChannels;
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
        uint index = ((n * shape.channels + c) * shape.height + id.y) * shape.width + id.x;
        uint x = index % shape.inWidth;
        index /= shape.inWidth;
        uint y = index % shape.inHeight;
        index /= shape.inHeight;
        uint inC = index % shape.inChannels;
        uint inN = index / shape.inChannels;
        result[lane] = imageLoad(source, ivec3(x, y, inN * inSlices + inC / 4u))[inC % 4u];
    }
    // Lanes hold fp16 values as loaded: they store exactly.
    imageStore(destination, ivec3(id), result);
}
