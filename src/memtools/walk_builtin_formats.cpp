// The built-in page-table formats as JSON text, the same form a --format=FILE.json
// takes. docs/walk-formats/ holds identical copies (a test compares them).
#include <string_view>

namespace extmem::memtools::detail {

extern const std::string_view kX86_64FormatJson;
extern const std::string_view kX86_64La57FormatJson;
extern const std::string_view kGmmuFormatJson;

const std::string_view kX86_64FormatJson = R"json(
{
  "name": "x86-64",
  "description": "x86-64 4-level paging (Intel SDM vol. 3A, section 4.5): 48-bit canonical virtual addresses; PML4, PDPT, PD and PT of 512 8-byte entries; P (bit 0) marks an entry valid; PS (bit 7) in a PDPT or PD entry maps a 1 GiB or 2 MiB page; the address is bits 12-51",
  "va_bits": 48,
  "sign_extended": true,
  "byte_order": "little",
  "root": "PML4",
  "root_flags": "0x8000000000000fff",
  "root_hint": "the root may use 5-level paging (CR4.LA57): try --format=x86-64-la57",
  "levels": [
    {"name": "PML4", "shift": 39, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "next": "PDPT"},
    {"name": "PDPT", "shift": 30, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "leaf_if": {"mask": "0x80", "value": "0x80"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "leaf_address": {"low": 30, "high": 51, "shift": 30},
     "next": "PD"},
    {"name": "PD", "shift": 21, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "leaf_if": {"mask": "0x80", "value": "0x80"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "leaf_address": {"low": 21, "high": 51, "shift": 21},
     "next": "PT"},
    {"name": "PT", "shift": 12, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "address": {"low": 12, "high": 51, "shift": 12}}
  ]
}
)json";

const std::string_view kX86_64La57FormatJson = R"json(
{
  "name": "x86-64-la57",
  "description": "x86-64 5-level paging, CR4.LA57 set (Intel SDM vol. 3A, section 4.5): 57-bit canonical virtual addresses; PML5, PML4, PDPT, PD and PT of 512 8-byte entries; P (bit 0) marks an entry valid; PS (bit 7) in a PDPT or PD entry maps a 1 GiB or 2 MiB page; the address is bits 12-51",
  "va_bits": 57,
  "sign_extended": true,
  "byte_order": "little",
  "root": "PML5",
  "root_flags": "0x8000000000000fff",
  "root_hint": "the root may use 4-level paging (CR4.LA57 clear): try --format=x86-64",
  "levels": [
    {"name": "PML5", "shift": 48, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "next": "PML4"},
    {"name": "PML4", "shift": 39, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "next": "PDPT"},
    {"name": "PDPT", "shift": 30, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "leaf_if": {"mask": "0x80", "value": "0x80"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "leaf_address": {"low": 30, "high": 51, "shift": 30},
     "next": "PD"},
    {"name": "PD", "shift": 21, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "leaf_if": {"mask": "0x80", "value": "0x80"},
     "address": {"low": 12, "high": 51, "shift": 12},
     "leaf_address": {"low": 21, "high": 51, "shift": 21},
     "next": "PT"},
    {"name": "PT", "shift": 12, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "address": {"low": 12, "high": 51, "shift": 12}}
  ]
}
)json";

const std::string_view kGmmuFormatJson = R"json(
{
  "name": "gmmu",
  "description": "GMMU-style GPU page tables: 49-bit virtual addresses; a root level of 4 entries (VA bits 47-48, that is 49 - log2(4)), then levels at shifts 38 and 29, a level at shift 21 of 16-byte dual entries (big-page half at byte 0, small-page half at byte 8; the first valid half is walked) and page tables of 64 KiB big pages (shift 16) and 4 KiB small pages (shift 12). Bits 1-2 are the aperture (0 invalid, 1 video memory, 2 system memory coherent, 3 system memory non-coherent): a directory entry is valid when it is not 0; a page entry also needs bit 0. The address is bits 8 and up, shifted up by 12",
  "va_bits": 49,
  "sign_extended": false,
  "byte_order": "little",
  "root": "PD3",
  "levels": [
    {"name": "PD3", "shift": 47, "index_bits": 2, "entry_bytes": 8,
     "valid": {"mask": "0x6"},
     "aperture": {"low": 1, "high": 2, "shift": 0},
     "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
     "address": {"low": 8, "high": 52, "shift": 12},
     "next": "PD2"},
    {"name": "PD2", "shift": 38, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x6"},
     "aperture": {"low": 1, "high": 2, "shift": 0},
     "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
     "address": {"low": 8, "high": 52, "shift": 12},
     "next": "PD1"},
    {"name": "PD1", "shift": 29, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x6"},
     "aperture": {"low": 1, "high": 2, "shift": 0},
     "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
     "address": {"low": 8, "high": 52, "shift": 12},
     "next": "PD0"},
    {"name": "PD0", "shift": 21, "index_bits": 8, "entry_bytes": 16,
     "parts": [
       {"name": "big", "offset": 0,
        "valid": {"mask": "0x6"},
        "aperture": {"low": 1, "high": 2, "shift": 0},
        "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
        "address": {"low": 8, "high": 52, "shift": 12},
        "next": "PT-big"},
       {"name": "small", "offset": 8,
        "valid": {"mask": "0x6"},
        "aperture": {"low": 1, "high": 2, "shift": 0},
        "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
        "address": {"low": 8, "high": 52, "shift": 12},
        "next": "PT-small"}
     ]},
    {"name": "PT-big", "shift": 16, "index_bits": 5, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "aperture": {"low": 1, "high": 2, "shift": 0},
     "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
     "address": {"low": 8, "high": 52, "shift": 12}},
    {"name": "PT-small", "shift": 12, "index_bits": 9, "entry_bytes": 8,
     "valid": {"mask": "0x1", "value": "0x1"},
     "aperture": {"low": 1, "high": 2, "shift": 0},
     "aperture_names": ["invalid", "video", "sysmem-coherent", "sysmem-noncoherent"],
     "address": {"low": 8, "high": 52, "shift": 12}}
  ]
}
)json";

}  // namespace extmem::memtools::detail
