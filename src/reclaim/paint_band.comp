#version 450
// The GPU use of a store in extmem::reclaim's Vulkan binding: copy the store's
// first 32-bit word into a band of the output buffer. A store destroyed before
// this runs shows up as a wrong band.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) readonly buffer Store { uint colour; } store_data;
layout(set = 0, binding = 1, std430) writeonly buffer Output { uint words[]; } output_data;
layout(push_constant) uniform Band { uint first; uint count; } band;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < band.count) output_data.words[band.first + i] = store_data.colour;
}
