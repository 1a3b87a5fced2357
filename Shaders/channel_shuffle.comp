#version 450
// ShuffleNet's channel shuffle: output channel c is input channel
// (c % groups) * (C / groups) + c / groups, at the same item and position.
//
// One invocation per output texel; each channel lane is loaded from the
// input texel that holds its source channel. Padding lanes stay zero.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output, which is the input's
    uint groups;
} shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint s = id.z % shape.slices;
    uint perGroup = shape.channels / shape.groups;
    vec4 result = vec4(0.0);
    for (uint lane = 0u; lane < 4u; lane++) {
        uint c = s * 4u + lane;
        if (c >= shape.channels) break;
        uint from = (c % shape.groups) * perGroup + c / shape.groups;
        result[lane] = imageLoad(source, ivec3(id.xy, n * shape.slices + from / 4u))[from % 4u];
    }
    // Lanes hold fp16 values as loaded: they store exactly.
    imageStore(destination, ivec3(id), result);
}
