#!/usr/bin/env bash
# On the NVIDIA machine: runs scripts/nvidia-ab-rows.sh, then base against new on the CUDA, image and
# GL-semaphore rows with --measure, and seven faults those rows declare
# (extmem probe --list-routes=faults). Expects .gl/*.deb and .devbuild/{extmem-base,extmem-new,libfmt.so.9}
# as nvidia-ab-rows.sh does; writes under $OUT and prints the comparisons.
for f in .gl/*.deb; do dpkg -x $f /; done
cp .devbuild/libfmt.so.9 /usr/lib/x86_64-linux-gnu/ 2>/dev/null; ldconfig
bash scripts/nvidia-ab-rows.sh > /dev/null 2>&1
source scripts/nvidia-env.sh
r=--only=T1-opaque-fd-cuda,T1-cuda-vmm-fd,T1-cuda-vmm-multichunk,T1-cuda-ipc,T3-cuda-host-register,T4-image-cuda,T4-image-opaque-fd,T4-gles-image-cross-proc,T4-gles-image-same-proc,S1-gles-semaphore,S1-cuda-semaphore
for t in base new; do
  .devbuild/extmem-$t probe $r --measure --json=$OUT/$t-measure-rows.json > /dev/null 2>&1; echo "$t measure rows exit $?"
done
for f in "T4-gles-image-cross-proc:server:owner: export the handover semaphores:late" \
         "T4-image-cuda:client:compare every texel:mirror" \
         "T4-image-cuda:server:vkGetMemoryFdKHR:decoy" \
         "T4-gles-image-cross-proc:client:round 2: glWaitSemaphoreEXT:abort" \
         "S1-gles-semaphore:client:glFinish:abort" \
         "S1-cuda-semaphore:client:cuExternalMemoryGetMappedBuffer:abort" \
         "T1-opaque-fd-cuda:client:cuImportExternalMemory:abort"; do
  for t in base new; do
    echo "$t $f: $(EXTMEM_TEST_FAULT="$f" .devbuild/extmem-$t probe --only="${f%%:*}" 2>&1 | grep "^RESULT ${f%%:*} ")"
  done
done > $OUT/faults.txt
for p in default isolated measure-rows; do echo "$p: $(python3 scripts/compare-rows.py $OUT/base-$p.json $OUT/new-$p.json | tail -1)"; done
awk 'NR%2==1{a=$0; sub(/^base /,"",a)} NR%2==0{b=$0; sub(/^new /,"",b); print (a==b ? "same" : "DIFF"), substr(b,1,120)}' $OUT/faults.txt
tail -1 $OUT/summary.txt
