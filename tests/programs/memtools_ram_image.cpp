// Writes a synthetic 8 MiB guest RAM image for the `extmem scan` / `extmem walk`
// tests and prints, as one JSON document on stdout, everything planted in it.
//
//   memtools_ram_image OUT.img
//
// Layout: file [0, 4M) holds guest-physical [0, 4M); file [4M, 8M) holds
// guest-physical [0x100000000, +4M) (ram-map "0:0:4M,0x100000000:4M:4M").
// Background: three pages in four hold noise bytes below 0x40, every fourth is
// zero, so no planted value (all of whose distinguishing bytes are >= 0x40)
// can appear by accident. Planted:
//  - a 6-byte pattern at page offset 0x59c of three pages, at two other
//    offsets (one straddling a page boundary), and a near-miss that differs in its last byte;
//  - {pa, va} u64 pairs in both orders, and a misaligned copy of the va;
//  - 0x40-byte records (va, size, zero, 32-bit marker 0x7461696c), a decoy whose
//    zero field is 1, and the marker's bytes at a misaligned offset;
//  - x86-64 4-level tables (and a 5-level root above them) and GMMU-style tables (dual big/small entry,
//    invalid entries), written here bit by bit, independently of the format
//    descriptions the walker loads;
//  - a payload u64 at the physical address each mapped VA lands on.
// Every entry is written little-endian, as on x86-64.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kSize = 8 * kMiB;
constexpr std::uint64_t kHighGpa = 0x100000000;  // guest-physical base of the file's second half

std::vector<std::uint8_t> image(kSize);

// File offset of a guest-physical address under the ram-map above.
std::uint64_t off(std::uint64_t gpa) { return gpa >= kHighGpa ? gpa - kHighGpa + 4 * kMiB : gpa; }

void put64(std::uint64_t file_offset, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) image.at(file_offset + i) = static_cast<std::uint8_t>(v >> (8 * i));
}
void put32(std::uint64_t file_offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) image.at(file_offset + i) = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_bytes(std::uint64_t file_offset, const std::vector<std::uint8_t>& b) {
  for (std::size_t i = 0; i < b.size(); ++i) image.at(file_offset + i) = b[i];
}
void zero_page(std::uint64_t gpa) { std::memset(&image.at(off(gpa)), 0, 4096); }

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(v));
  return buf;
}

// x86-64 entries (Intel SDM 4.5): P = bit 0, R/W = bit 1, PS = bit 7, address bits 12-51.
std::uint64_t x86_table(std::uint64_t pa) { return pa | 0x3; }
std::uint64_t x86_large(std::uint64_t pa) { return pa | 0x83; }
// GMMU-style: aperture in bits 1-2 (1 = video memory), page entries valid at bit 0,
// address >> 12 stored from bit 8.
std::uint64_t gmmu_pde(std::uint64_t pa) { return ((pa >> 12) << 8) | (1 << 1); }
std::uint64_t gmmu_pte(std::uint64_t pa) { return ((pa >> 12) << 8) | (1 << 1) | 1; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: memtools_ram_image OUT.img\n");
    return 2;
  }
  std::uint64_t state = 0x9e3779b97f4a7c15;
  for (std::uint64_t page = 0; page < kSize / 4096; ++page) {
    if (page % 4 == 0) continue;
    for (std::uint64_t i = 0; i < 4096; ++i) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      image[page * 4096 + i] = static_cast<std::uint8_t>(state & 0x3f);
    }
  }
  std::string j = "{\n  \"size\": " + std::to_string(kSize) + ",\n  \"ram_map\": \"0:0:4M,0x100000000:4M:4M\",\n";

  // Byte patterns.
  const std::vector<std::uint8_t> pattern = {0xb1, 0x7e, 0x55, 0xed, 0xc0, 0xde};
  const std::uint64_t at_page_offset[] = {0x5000 + 0x59c, 0x2bc000 + 0x59c, 0x600000 + 0x59c};
  const std::uint64_t elsewhere[] = {0xd100, 0x14ffd};
  for (std::uint64_t o : at_page_offset) put_bytes(o, pattern);
  for (std::uint64_t o : elsewhere) put_bytes(o, pattern);
  put_bytes(0x1e000 + 0x59c, {0xb1, 0x7e, 0x55, 0xed, 0xc0, 0xdf});  // near-miss
  j += "  \"pattern\": \"b17e55edc0de\",\n  \"page_offset\": \"0x59c\",\n  \"pattern_at_page_offset\": [";
  for (std::uint64_t o : at_page_offset) j += hex(o) + (o == at_page_offset[2] ? "" : ", ");
  j += "],\n  \"pattern_elsewhere\": [" + hex(elsewhere[0]) + ", " + hex(elsewhere[1]) + "],\n";

  // {pa, va} pairs: pa first at 0xb000, va first at 0x520800; a misaligned va at 0xc004.
  const std::uint64_t pair_pa = 0x1234000, pair_va = 0x7f00cafe0000;
  put64(0xb000, pair_pa), put64(0xb008, pair_va);
  put64(0x520800, pair_va), put64(0x520808, pair_pa);
  put64(0xc004, pair_va);
  j += "  \"pair\": {\"pa\": " + hex(pair_pa) + ", \"va\": " + hex(pair_va) +
       ", \"pa_first_at\": " + hex(0xb000) + ", \"va_first_at\": " + hex(0x520800) + ", \"misaligned_va_at\": " +
       hex(0xc004) + "},\n";

  // x86-64 tables, in the high half: PML4 at 0x100010000.
  const std::uint64_t pml4 = kHighGpa + 0x10000, pdpt_lo = kHighGpa + 0x11000, pd_lo = kHighGpa + 0x12000,
                      pt_lo = kHighGpa + 0x13000, pdpt_hi = kHighGpa + 0x14000, pd_hi = kHighGpa + 0x15000,
                      pt_hi = kHighGpa + 0x16000;
  for (std::uint64_t t : {pml4, pdpt_lo, pd_lo, pt_lo, pdpt_hi, pd_hi, pt_hi}) zero_page(t);
  const std::uint64_t va1 = 0x7f0000001000, va2 = 0x7f0000401234, va3 = 0xffff800000003000,
                      va4 = 0x7f0000002000, va5 = 0x100000000000;
  const std::uint64_t p1 = 0x305000, large = 0x200000, p3 = kHighGpa + 0x200000;
  put64(off(pml4) + 8 * 254, x86_table(pdpt_lo));
  put64(off(pdpt_lo) + 8 * 0, x86_table(pd_lo));
  put64(off(pd_lo) + 8 * 0, x86_table(pt_lo));
  put64(off(pt_lo) + 8 * 1, x86_table(p1));        // va1 -> p1 (4 KiB)
  put64(off(pd_lo) + 8 * 2, x86_large(large));     // va2 -> 2 MiB page at 0x200000
  put64(off(pt_lo) + 8 * 2, 0x306002);             // va4: present bit clear -> invalid at PT
  put64(off(pml4) + 8 * 256, x86_table(pdpt_hi));
  put64(off(pdpt_hi) + 8 * 0, x86_table(pd_hi));
  put64(off(pd_hi) + 8 * 0, x86_table(pt_hi));
  put64(off(pt_hi) + 8 * 3, x86_table(p3));        // va3 -> p3
  // va5: PML4 entry 32 is zero -> invalid at PML4.
  // A PML5 above the same PML4, for 5-level paging (CR4.LA57): entry 0 (VAs
  // below 2^48) and entry 511 (VAs sign-extended from bit 56) both lead to it,
  // so every walk above gives the same result from this root.
  const std::uint64_t pml5 = kHighGpa + 0x17000;
  zero_page(pml5);
  put64(off(pml5) + 8 * 0, x86_table(pml4));
  put64(off(pml5) + 8 * 511, x86_table(pml4));
  const std::uint64_t payload1 = 0x5041594c4f414431, payload2 = 0x5041594c4f414432, payload3 = 0x5041594c4f414433;
  put64(off(p1 + 0x10), payload1);
  put64(off(large + 0x1234), payload2);
  put64(off(p3 + 0x40), payload3);
  j += "  \"x86\": {\"root\": " + hex(pml4) + ", \"la57_root\": " + hex(pml5) + ", \"walks\": [\n";
  j += "    {\"va\": " + hex(va1 + 0x10) + ", \"pa\": " + hex(p1 + 0x10) + ", \"page_size\": 4096, \"payload\": " + hex(payload1) + "},\n";
  j += "    {\"va\": " + hex(va2) + ", \"pa\": " + hex(large + 0x1234) + ", \"page_size\": 2097152, \"payload\": " + hex(payload2) + "},\n";
  j += "    {\"va\": " + hex(va3 + 0x40) + ", \"pa\": " + hex(p3 + 0x40) + ", \"page_size\": 4096, \"payload\": " + hex(payload3) + "},\n";
  j += "    {\"va\": " + hex(va4) + ", \"invalid_level\": \"PT\"},\n";
  j += "    {\"va\": " + hex(va5) + ", \"invalid_level\": \"PML4\"}],\n";
  j += "    \"non_canonical_va\": " + hex(0x0000800000000000) + "},\n";

  // GMMU-style tables, in the low half.
  const std::uint64_t pd3 = 0x20000, pd2 = 0x21000, pd1 = 0x22000, pd0 = 0x23000, pt_big = 0x24000,
                      pt_small = 0x25000;
  for (std::uint64_t t : {pd3, pd2, pd1, pd0, pt_big, pt_small}) zero_page(t);
  const std::uint64_t upper = (1ull << 47) | (5ull << 38) | (7ull << 29);
  const std::uint64_t g1 = upper | (9ull << 21) | (3ull << 16) | 0x2345;  // dual entry, both halves valid
  const std::uint64_t g2 = upper | (10ull << 21) | 0x5678;                // big half invalid, small valid
  const std::uint64_t g3 = upper | (9ull << 21) | 0x7010;                 // PT-big[0] and PT-small[7] invalid
  const std::uint64_t big = kHighGpa + 0x100000, small = 0x310000, small2 = 0x311000;
  put64(pd3 + 8 * 1, gmmu_pde(pd2));
  put64(pd2 + 8 * 5, gmmu_pde(pd1));
  put64(pd1 + 8 * 7, gmmu_pde(pd0));
  put64(pd0 + 16 * 9 + 0, gmmu_pde(pt_big));     // dual entry 9: big half
  put64(pd0 + 16 * 9 + 8, gmmu_pde(pt_small));   //               small half
  put64(pd0 + 16 * 10 + 8, gmmu_pde(pt_small));  // dual entry 10: small half only
  put64(pt_big + 8 * 3, gmmu_pte(big));
  put64(pt_small + 8 * 0x32, gmmu_pte(small));
  put64(pt_small + 8 * 5, gmmu_pte(small2));
  put64(pt_small + 8 * 7, gmmu_pte(0x312000) & ~std::uint64_t{1});  // aperture set, valid bit clear
  const std::uint64_t payload4 = 0x5041594c4f414434, payload5 = 0x5041594c4f414435, payload6 = 0x5041594c4f414436;
  put64(off(big + 0x2345), payload4);
  put64(off(small + 0x345), payload5);
  put64(off(small2 + 0x678), payload6);
  j += "  \"gmmu\": {\"root\": " + hex(pd3) + ", \"walks\": [\n";
  j += "    {\"va\": " + hex(g1) + ", \"pa\": " + hex(big + 0x2345) + ", \"page_size\": 65536, \"payload\": " + hex(payload4) +
       ", \"small_pa\": " + hex(small + 0x345) + ", \"small_payload\": " + hex(payload5) + "},\n";
  j += "    {\"va\": " + hex(g2) + ", \"pa\": " + hex(small2 + 0x678) + ", \"page_size\": 4096, \"payload\": " + hex(payload6) + "},\n";
  j += "    {\"va\": " + hex(g3) + ", \"invalid_level\": \"PT-big\", \"small_invalid_level\": \"PT-small\"}],\n";
  j += "    \"outside_va\": " + hex(1ull << 49) + "},\n";

  // Records: a 0x40-byte window whose va, size, zero and marker fields sit at
  // +0x18, +0x20, +0x28 and +0x30 (the marker is the anchor of
  // "va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c").
  const std::uint32_t marker = 0x7461696c;
  struct Rec {
    std::uint64_t window, va, size;
  };
  const Rec recs[] = {{0x6040, va1 + 0x10, 0x1000}, {0x7080, va2, 0x200000}, {0x520100, va3 + 0x40, 0x3000},
                      {0x7fffc0, g1, 0x10000}};
  for (const Rec& r : recs) {
    put64(r.window + 0x18, r.va), put64(r.window + 0x20, r.size), put64(r.window + 0x28, 0);
    put32(r.window + 0x30, marker), put32(r.window + 0x34, 0);
  }
  put64(0x9000 + 0x18, 0x7f0000009000), put64(0x9000 + 0x20, 0x1000), put64(0x9000 + 0x28, 1);  // decoy: zero = 1
  put32(0x9000 + 0x30, marker), put32(0x9000 + 0x34, 0);
  put32(0xa002, marker);  // misaligned
  j += "  \"records\": [";
  for (const Rec& r : recs)
    j += "{\"marker_at\": " + hex(r.window + 0x30) + ", \"va\": " + hex(r.va) + ", \"size\": " + hex(r.size) + "}" +
         (&r == &recs[3] ? "" : ", ");
  j += "],\n  \"decoy_marker_at\": " + hex(0x9030) + ",\n  \"misaligned_marker_at\": " + hex(0xa002) + "\n}\n";

  std::FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr || std::fwrite(image.data(), 1, image.size(), f) != image.size() || std::fclose(f) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  std::fputs(j.c_str(), stdout);
  return 0;
}
