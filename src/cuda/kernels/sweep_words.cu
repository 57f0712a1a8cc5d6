// The whole-allocation sweep's word moves as CUDA kernels (src/cuda/sweep_kernels.h):
// one launch moves the 8-byte word at every stamp offset, where one cuMemcpyAsync per
// stamp costs a driver call each (262144 of them per pass at 1 GiB). Compiled to PTX
// by scripts/gen-sweep-ptx.sh into sweep_words_ptx.h; the driver JIT-compiles it.
// Volatile accesses: each word is read or written through the mapping exactly once.
extern "C" __global__ void extmem_gather_words(unsigned long long* out, const unsigned long long* base_bytes,
                                               const unsigned long long* offsets, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = *(const volatile unsigned long long*)((const char*)base_bytes + offsets[i]);
}

extern "C" __global__ void extmem_scatter_words(unsigned long long* base_bytes, const unsigned long long* in,
                                                const unsigned long long* offsets, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    *(volatile unsigned long long*)((char*)base_bytes + offsets[i]) = in[i];
}
