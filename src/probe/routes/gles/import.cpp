#include "probe/routes/gles/import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "gles/program.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/drivers.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {

GlSharedBuffer::GlSharedBuffer(const gles::EglContext& ctx) : ctx_(ctx) { ++drivers::live_gl_buffers(); }

GlSharedBuffer::~GlSharedBuffer() {
  --drivers::live_gl_buffers();
  const gles::GlFns& gl = ctx_.gl();
  if (buffer != 0) {
    if (map != nullptr) {
      gl.glBindBuffer(GL_COPY_WRITE_BUFFER, buffer);
      gl.glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    }
    gl.glDeleteBuffers(1, &buffer);
  }
  if (memory != 0) gl.glDeleteMemoryObjectsEXT(1, &memory);
  ctx_.take_error();
}

GlImportResult import_with_ladder(const gles::EglContext& ctx, int fd, std::uint64_t requested,
                                  std::uint64_t reqs_size, std::uint64_t fd_size) {
  const gles::GlFns& gl = ctx.gl();
  GlImportResult result;
  std::unique_ptr<GlSharedBuffer> candidate;
  std::string last_ownership;
  auto try_rung = [&](const Rung& rung) -> RungOutcome {
    auto shared = std::make_unique<GlSharedBuffer>(ctx);
    ctx.take_error();
    gl.glCreateMemoryObjectsEXT(1, &shared->memory);
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR) return {false, "glCreateMemoryObjectsEXT", gles::gl_error_name(e)};
    GLint dedicated = rung.dedicated ? GL_TRUE : GL_FALSE;
    gl.glMemoryObjectParameterivEXT(shared->memory, GL_DEDICATED_MEMORY_OBJECT_EXT, &dedicated);
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR)
      return {false, "glMemoryObjectParameterivEXT(GL_DEDICATED_MEMORY_OBJECT_EXT)", gles::gl_error_name(e)};
    auto dup = ImportDup::of(fd);
    if (!dup) return {false, "dup", dup.error().code};
    gl.glImportMemoryFdEXT(shared->memory, rung.import_size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, dup->number());
    // Ownership passes to GL only on success (GL_EXT_memory_object_fd).
    GLenum import_error = ctx.take_error();
    std::string ownership = dup->settle(import_error == GL_NO_ERROR);
    if (import_error != GL_NO_ERROR) {
      // Only the anomaly is worth a note: a failed import that closed our fd anyway.
      if (dup->consumed()) result.fd_notes.push_back(rung.label() + ": " + ownership);
      return {false, "glImportMemoryFdEXT", gles::gl_error_name(import_error)};
    }
    last_ownership = ownership;
    gl.glGenBuffers(1, &shared->buffer);
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, shared->buffer);
    gl.glBufferStorageMemEXT(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(rung.buffer_size), shared->memory, 0);
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR) return {false, "glBufferStorageMemEXT", gles::gl_error_name(e)};
    shared->size = rung.buffer_size;
    candidate = std::move(shared);
    return {true, {}, {}};
  };
  result.ladder = walk_ladder(ladder_rungs(requested, reqs_size, fd_size), try_rung);
  if (!result.ladder.accepted) {
    result.status = "storage-refused";
    return result;
  }
  result.shared = std::move(candidate);
  result.fd_notes.push_back("gl " + last_ownership);
  gl.glBindBuffer(GL_COPY_WRITE_BUFFER, result.shared->buffer);
  gl.glGetBufferParameteriv(GL_COPY_WRITE_BUFFER, GL_BUFFER_STORAGE_FLAGS_EXT, &result.storage_flags);
  if (ctx.take_error() != GL_NO_ERROR) result.storage_flags = -1;
  void* p = gl.glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(requested),
                                GL_MAP_READ_BIT | GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT_EXT | GL_MAP_COHERENT_BIT_EXT);
  GLenum e = ctx.take_error();
  if (p == nullptr || e != GL_NO_ERROR) {
    result.status = "persistent-map-refused";
    result.map_error = gles::gl_error_name(e);
    if (p != nullptr) gl.glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    return result;
  }
  result.shared->map = static_cast<std::byte*>(p);
  result.status = "mapped";
  return result;
}

Result<std::size_t> gl_gpu_round(const gles::EglContext& ctx, GLuint shared, const Layout& layout, Region read_region,
                                 std::uint64_t read_seed, Region write_region, std::uint64_t write_seed) {
  const gles::GlFns& gl = ctx.gl();
  std::optional<Error> error;
  auto failed = [&](const char* step) {
    GLenum e = ctx.take_error();
    if (e == GL_NO_ERROR) return false;
    error = Error{step, ErrorKind::driver, gles::gl_error_name(e), {}};
    return true;
  };
  ctx.take_error();
  // Private buffer: [0, 4K) receives the copy-out, [4K, 8K) holds the pattern for the GPU write.
  std::vector<std::byte> init(2 * kRegionSize, std::byte{0});
  pattern::fill(std::span<std::byte>(init).subspan(kRegionSize), write_seed);
  GLuint priv = 0;
  gl.glGenBuffers(1, &priv);
  gl.glBindBuffer(GL_COPY_WRITE_BUFFER, priv);
  gl.glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(init.size()), init.data(), GL_DYNAMIC_READ);
  std::size_t stale = 0;
  if (!failed("glBufferData(private)")) {
    gl.glBindBuffer(GL_COPY_READ_BUFFER, shared);
    gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(layout.offset(read_region)),
                           0, kRegionSize);
  }
  if (!error && !failed("glCopyBufferSubData(shared -> private)")) {
    gl.glBindBuffer(GL_COPY_READ_BUFFER, priv);
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, shared);
    gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, kRegionSize,
                           static_cast<GLintptr>(layout.offset(write_region)), kRegionSize);
    failed("glCopyBufferSubData(private -> shared)");
  }
  if (!error && gl.glMemoryBarrier != nullptr) {
    gl.glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT_EXT);
    failed("glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT)");
  }
  if (!error) {
    GLsync sync = gl.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    GLenum wait = gl.glClientWaitSync(sync, GL_SYNC_FLUSH_COMMANDS_BIT, 10'000'000'000ull);
    gl.glDeleteSync(sync);
    if (wait != GL_ALREADY_SIGNALED && wait != GL_CONDITION_SATISFIED)
      error = Error{"glClientWaitSync", ErrorKind::driver,
                    wait == GL_TIMEOUT_EXPIRED ? "GL_TIMEOUT_EXPIRED" : gles::gl_error_name(ctx.take_error()), {}};
  }
  if (!error) {
    gl.glBindBuffer(GL_COPY_READ_BUFFER, priv);
    void* p = gl.glMapBufferRange(GL_COPY_READ_BUFFER, 0, kRegionSize, GL_MAP_READ_BIT);
    if (p == nullptr || failed("glMapBufferRange(private, READ)")) {
      if (!error) error = Error{"glMapBufferRange(private, READ)", ErrorKind::driver, "null pointer", {}};
    } else {
      stale = pattern::count_stale_words(std::span<const std::byte>(static_cast<const std::byte*>(p), kRegionSize),
                                         read_seed);
      gl.glUnmapBuffer(GL_COPY_READ_BUFFER);
    }
  }
  gl.glDeleteBuffers(1, &priv);
  ctx.take_error();
  if (error) return *error;
  return stale;
}

void gl_gpu_access(const gles::EglContext& ctx, GLuint shared, const Layout& layout, Region read_region,
                   Region write_region, Leg& gpu) {
  record_gpu_round(gl_gpu_round(ctx, shared, layout, read_region, seed_of(read_region), write_region,
                                gpu_seed_of(write_region)),
                   "GL", read_region, gpu);
}

namespace {
namespace EXTMEM_ROUTE_FILE {

// The GL twin of probe/worker/sweep_words.comp: the sweep's word moves in one dispatch.
constexpr const char* kSweepWordsCompute = R"(#version 310 es
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Shared { uvec2 words[]; } shared_words;
layout(std430, binding = 1) buffer Private { uvec2 words[]; } private_words;
layout(std430, binding = 2) readonly buffer Index { uint at[]; } index;
uniform uint count;
uniform uint scatter;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    if (scatter != 0u) shared_words.words[index.at[i]] = private_words.words[i];
    else private_words.words[i] = shared_words.words[index.at[i]];
  }
}
)";
// Plans with at least this many stamps (16 MiB and up) use the shader: below it, a
// program build costs more than the copies it saves (one glCopyBufferSubData per stamp).
constexpr std::size_t kShaderStamps = 4096;
constexpr GLuint kSweepLocalSize = 256;
constexpr GLuint kSweepMaxGroups = 1024;

// The GL side of one gpu_sweep: a private buffer of one word per stamp, and
// the word moves between it and the shared buffer: one dispatch of the sweep
// shader where the context has compute and the shared buffer fits one storage
// block, else one glCopyBufferSubData per stamp (always with the test-only
// private tail, whose words live in a second buffer).
class GlWords {
 public:
  GlWords(const gles::EglContext& ctx, GLuint shared, const whole::Plan& plan, GlPrivateTail tail)
      : ctx_(ctx), gl_(ctx.gl()), shared_(shared), plan_(plan), tail_(tail) {}
  ~GlWords() {
    if (priv_ != 0) gl_.glDeleteBuffers(1, &priv_);
    if (index_ != 0) gl_.glDeleteBuffers(1, &index_);
    ctx_.take_error();
  }
  GlWords(const GlWords&) = delete;
  GlWords& operator=(const GlWords&) = delete;

  Status create() {
    ctx_.take_error();
    gl_.glGenBuffers(1, &priv_);
    gl_.glBindBuffer(GL_COPY_WRITE_BUFFER, priv_);
    gl_.glBufferData(GL_COPY_WRITE_BUFFER, bytes(), nullptr, GL_DYNAMIC_READ);
    if (auto st = checked("whole-allocation sweep: glBufferData(private, one word per stamp)"); !st) return st;
    if (plan_.count >= kShaderStamps && tail_.buffer == 0) try_shader();
    return {};
  }

  bool uses_shader() const { return program_.has_value(); }

  Status gather(std::span<std::uint64_t> out) {
    ctx_.take_error();
    if (program_) {
      if (auto st = dispatch(false); !st) return st;
      return read_back(out);
    }
    gl_.glBindBuffer(GL_COPY_WRITE_BUFFER, priv_);
    for (std::size_t i = 0; i < plan_.count; ++i) {
      gl_.glBindBuffer(GL_COPY_READ_BUFFER, source_of(i));
      gl_.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(plan_.offset(i)),
                              static_cast<GLintptr>(i * kWord), kWord);
    }
    if (auto st = checked("whole-allocation sweep: glCopyBufferSubData(shared -> private, one word per stamp)"); !st)
      return st;
    if (auto st = wait(); !st) return st;
    return read_back(out);
  }

  // The private buffer's words, mapped for reading once the work that wrote them completed.
  Status read_back(std::span<std::uint64_t> out) {
    gl_.glBindBuffer(GL_COPY_READ_BUFFER, priv_);
    void* p = gl_.glMapBufferRange(GL_COPY_READ_BUFFER, 0, bytes(), GL_MAP_READ_BIT);
    if (p == nullptr) {
      GLenum e = ctx_.take_error();
      return Error{"whole-allocation sweep: glMapBufferRange(private, READ)", ErrorKind::driver,
                   e == GL_NO_ERROR ? "null pointer" : gles::gl_error_name(e), {}};
    }
    std::memcpy(out.data(), p, plan_.count * kWord);
    gl_.glUnmapBuffer(GL_COPY_READ_BUFFER);
    return checked("whole-allocation sweep: glUnmapBuffer(private)");
  }

  Status scatter(std::span<const std::uint64_t> in) {
    ctx_.take_error();
    gl_.glBindBuffer(GL_COPY_READ_BUFFER, priv_);
    gl_.glBufferSubData(GL_COPY_READ_BUFFER, 0, bytes(), in.data());
    if (auto st = checked("whole-allocation sweep: glBufferSubData(private)"); !st) return st;
    if (program_) return dispatch(true);
    for (std::size_t i = 0; i < plan_.count; ++i) {
      gl_.glBindBuffer(GL_COPY_WRITE_BUFFER, source_of(i));
      gl_.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(i * kWord),
                              static_cast<GLintptr>(plan_.offset(i)), kWord);
    }
    if (auto st = checked("whole-allocation sweep: glCopyBufferSubData(private -> shared, one word per stamp)"); !st)
      return st;
    if (gl_.glMemoryBarrier != nullptr) {
      gl_.glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT_EXT);
      if (auto st = checked("whole-allocation sweep: glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT)"); !st)
        return st;
    }
    return wait();
  }

 private:
  static constexpr std::size_t kWord = sizeof(std::uint64_t);
  GLsizeiptr bytes() const { return static_cast<GLsizeiptr>(plan_.count * kWord); }

  // Builds the shader and the index buffer; on any refusal the copies stay (program_ empty).
  void try_shader() {
    if (gl_.glDispatchCompute == nullptr) return;  // a GLES 3.0 context
    GLint max_block = 0;
    gl_.glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &max_block);
    if (ctx_.take_error() != GL_NO_ERROR || max_block <= 0 || plan_.size > static_cast<std::size_t>(max_block)) return;
    auto program = gles::Program::build(ctx_, {{GL_COMPUTE_SHADER, kSweepWordsCompute}});
    if (!program) return;
    std::vector<GLuint> at(plan_.count);
    for (std::size_t i = 0; i < plan_.count; ++i) at[i] = static_cast<GLuint>(plan_.offset(i) / kWord);
    gl_.glGenBuffers(1, &index_);
    gl_.glBindBuffer(GL_COPY_WRITE_BUFFER, index_);
    gl_.glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(at.size() * sizeof(GLuint)), at.data(), GL_STATIC_DRAW);
    if (ctx_.take_error() != GL_NO_ERROR) return;
    count_at_ = gl_.glGetUniformLocation(program->id(), "count");
    scatter_at_ = gl_.glGetUniformLocation(program->id(), "scatter");
    if (count_at_ < 0 || scatter_at_ < 0) return;
    program_.emplace(std::move(*program));
  }

  // One dispatch of the sweep shader, its writes made visible to mappings and copies, completed.
  Status dispatch(bool scatter) {
    gl_.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
    gl_.glUseProgram(program_->id());
    gl_.glUniform1ui(count_at_, static_cast<GLuint>(plan_.count));
    gl_.glUniform1ui(scatter_at_, scatter ? 1u : 0u);
    gl_.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, shared_);
    gl_.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, priv_);
    gl_.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 2, index_);
    const auto groups = static_cast<GLuint>(
        std::clamp<std::size_t>((plan_.count + kSweepLocalSize - 1) / kSweepLocalSize, 1, kSweepMaxGroups));
    gl_.glDispatchCompute(groups, 1, 1);
    gl_.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT |
                        GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT_EXT);
    for (GLuint b = 0; b < 3; ++b) gl_.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, b, 0);
    gl_.glUseProgram(0);
    if (auto st = checked(scatter ? "whole-allocation sweep: glDispatchCompute(scatter)"
                                  : "whole-allocation sweep: glDispatchCompute(gather)");
        !st)
      return st;
    return wait();
  }
  GLuint source_of(std::size_t i) const {
    return tail_.buffer != 0 && plan_.offset(i) >= tail_.from ? tail_.buffer : shared_;
  }
  Status checked(const char* step) const {
    if (GLenum e = ctx_.take_error(); e != GL_NO_ERROR) return Error{step, ErrorKind::driver, gles::gl_error_name(e), {}};
    return {};
  }
  // Every copy so far has completed (a fence and a client wait with flush).
  Status wait() const {
    GLsync sync = gl_.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    if (sync == nullptr) return checked("whole-allocation sweep: glFenceSync");
    GLenum w = gl_.glClientWaitSync(sync, GL_SYNC_FLUSH_COMMANDS_BIT, 30'000'000'000ull);
    gl_.glDeleteSync(sync);
    if (w == GL_ALREADY_SIGNALED || w == GL_CONDITION_SATISFIED) return {};
    return Error{"whole-allocation sweep: glClientWaitSync", ErrorKind::driver,
                 w == GL_TIMEOUT_EXPIRED ? "GL_TIMEOUT_EXPIRED" : gles::gl_error_name(ctx_.take_error()), {}};
  }

  const gles::EglContext& ctx_;
  const gles::GlFns& gl_;
  GLuint shared_;
  const whole::Plan& plan_;
  GlPrivateTail tail_;
  GLuint priv_ = 0;
  GLuint index_ = 0;
  std::optional<gles::Program> program_;
  GLint count_at_ = -1, scatter_at_ = -1;
};

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void gl_whole(const gles::EglContext& ctx, const std::function<void(const std::string&)>& step, GLuint shared,
              std::size_t size, const whole::Far& far, Leg& gpu, GlPrivateTail tail) {
  if (!(gpu.read_ok && gpu.write_ok)) return;
  const whole::Plan plan = whole::plan_for(size);
  if (plan.count == 0) return;
  GlWords words(ctx, shared, plan, tail);
  if (step) step(fmt::format("whole-allocation sweep through {}: private GL buffer", gpu.name));
  if (auto st = words.create(); !st) {
    fail_leg(gpu, st.error());
    gpu.write_ok = false;
    return;
  }
  if (step)
    step(fmt::format("whole-allocation sweep through {}: {}", gpu.name,
                     words.uses_shader() ? "one dispatch a pass (sweep shader)" : "one copy a stamp"));
  GpuWords access;
  access.gather = [&](std::span<std::uint64_t> out) { return words.gather(out); };
  access.scatter = [&](std::span<const std::uint64_t> in) { return words.scatter(in); };
  gpu_sweep(step, "GL", plan, access, far, gpu);
}

}  // namespace extmem::probe
