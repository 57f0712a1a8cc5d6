// Every row the probe prints, in print order: the one literal list of row names
// in the tests. It is the interface guard: RouteTable.RowNamesAreTheInterface
// holds the route table to it, so renaming, dropping or reordering a row fails
// a test; every other row list in the tests derives from the table.
#pragma once

#include <string>
#include <vector>

namespace extmem::test {

inline const std::vector<std::string> kRowNames = {
    "T0-ahb-blob-transfer",        "T0S-sustained-lock",          "T1-opaque-fd",
    "T1-dma-buf",                  "T1-opaque-fd-foreign-fd",
    "T1-gles-memobj-fd-same-proc", "T1-gles-memobj-fd-cross-proc",
    "T3-memfd-cross-process",      "T3-external-memory-host",     "T3-client-memfd-server-import",
    "T3-memfd-sealed",
    "T1-opaque-fd-cuda",           "T1-cuda-vmm-fd",              "T3-cuda-host-register",
    "T1-cuda-ipc",                 "T1-cuda-vmm-multichunk",
    "T4-image-opaque-fd",          "T4-image-opaque-fd@linear",   "T4-gles-image-same-proc",
    "T4-gles-image-cross-proc",    "T4-image-dma-buf-modifier",   "T4-image-cuda",
    "S1-semaphore-opaque-fd",      "S1-timeline-opaque-fd",       "S1-sync-fd",
    "S1-gles-semaphore",           "S1-cuda-semaphore",
    "T5-ucx-rkey-ptr",             "T5-ucx-rma",
};

}  // namespace extmem::test
