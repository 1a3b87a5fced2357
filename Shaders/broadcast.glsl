// Reading an operand at its broadcast place (binary.comp, where.comp).
// Each operand has the output's rank; an extent of 1 (width, height,
// batch) is read at coordinate 0, and an operand with one channel is read
// at slice 0 (its lane 0 then feeds all four lanes: see the callers).

// The texel of an operand of extents (width, height, channels, batch) that
// output texel `id` (item n, slice s) reads.
ivec3 lk_operand_texel(uvec4 extents, uvec3 id, uint n, uint s) {
    uint x = extents.x == 1u ? 0u : id.x;
    uint y = extents.y == 1u ? 0u : id.y;
    uint item = extents.w == 1u ? 0u : n;
    uint slice = extents.z == 1u ? 0u : s;
    return ivec3(x, y, item * ((extents.z + 3u) / 4u) + slice);
}
