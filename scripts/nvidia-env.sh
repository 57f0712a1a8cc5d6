# Sourced by the scripts/nvidia-*.sh runs on the NVIDIA GPU machine (no package
# registry there), from the repository root: unpacks the carried loaders
# (.gl/*.deb: Debian libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0
# libgles2, fetched with `apt-get download`), puts the carried libraries of
# .devbuild/ (libfmt.so.9) on the library path, and points the Vulkan loader and
# glvnd at NVIDIA's driver files.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export LD_LIBRARY_PATH="$PWD/.devbuild"
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
