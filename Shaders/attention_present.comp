#version 450
// Attention's present key or value cache, [B, kvHeads, past + new, size]:
// the past cache's rows, then the new K or V rows (4-D [B, kvHeads, new,
// size], or 3-D [B, new, kvHeads * size] split into heads). One invocation
// per output texel, a plain copy of fp16 values (no rounding to redo).
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray current;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
// The past cache's raw fp16 texels ([layer][y][x][lane], two lanes a uint; any
// buffer when pastLength is 0), as Shaders/attention.comp reads it.
layout(std430, binding = 2) readonly buffer PastTexels { uint past[]; };
// LK_SHAPE_FIELDS are the present cache's image; newLength: the new rows;
// packed: 1 when `current` is 3-D.
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; uint pastLength; uint newLength; uint packed; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    vec4 texel;
    if (id.y < shape.pastLength) {
        // The past cache has the present's layers and width, pastLength rows.
        uint index = (id.z * shape.pastLength + id.y) * shape.width + id.x;
        texel = vec4(unpackHalf2x16(past[index * 2u]), unpackHalf2x16(past[index * 2u + 1u]));
    } else if (shape.packed == 0u) {
        texel = imageLoad(current, ivec3(id.x, id.y - shape.pastLength, id.z));
    } else {
        // Lane l is head 4 * slice + l; in 3-D K a texel holds 4 rows of one head.
        uint k = id.y - shape.pastLength;
        uint item = lk_item_of(id.z, shape.slices), slice = lk_slice_of(id.z, shape.slices);
        uint rowSlices = (shape.newLength + 3u) / 4u;
        texel = vec4(0.0);
        for (uint l = 0u; l < 4u; l++) {
            uint head = slice * 4u + l;
            if (head < shape.channels) {
                texel[l] = imageLoad(current, ivec3(0, head * shape.width + id.x, item * rowSlices + k / 4u))[k % 4u];
            }
        }
    }
    imageStore(destination, ivec3(id), texel);
}
