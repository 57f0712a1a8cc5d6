// The Android-only rows: their halves are not in a Linux build, so phase A
// decides them SKIP (kAndroidOnlyReason) and no process is started. Their legs
// are declared by the Android build that runs them.
#include "probe/routes.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {
constexpr HandleNeed kAhb[] = {{"AHARDWAREBUFFER", HandleFeature::exportable},
                               {"AHARDWAREBUFFER", HandleFeature::importable}};
constexpr std::string_view kAhbExtensions[] = {"VK_ANDROID_external_memory_android_hardware_buffer"};

const RouteDef kT0AhbBlobTransfer{
    .row = "T0-ahb-blob-transfer",
    .group = "t0",
    .needs = {.platform = Platform::android, .extensions = kAhbExtensions, .handle_types = kAhb},
    .legs = {},
    .server = {"imports the client's AHardwareBuffer blob (CPU lock, Vulkan, GL), drives", nullptr},
    .client = {"allocates an AHardwareBuffer blob, writes A under its lock, sends it", nullptr}};
const RouteDef kT0SustainedLock{
    .row = "T0S-sustained-lock",
    .group = "t0",
    .needs = {.platform = Platform::android, .extensions = kAhbExtensions, .handle_types = kAhb},
    .legs = {},
    .server = {"reads A with its GPU and fills E/F each round, drives", nullptr},
    .client = {"allocates an AHardwareBuffer blob and keeps it locked across rounds", nullptr}};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT0AhbBlobTransfer, 10);
EXTMEM_ROUTE(kT0SustainedLock, 20);

}  // namespace extmem::probe
