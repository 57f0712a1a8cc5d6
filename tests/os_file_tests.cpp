// os::write_file_atomically and os::creatable_problem on what users really pass
// as output paths: plain files, symlinks, character devices (/dev/null,
// /dev/stdout), FIFOs, directories. Found by the first-contact review: writing
// `--json=/dev/null` as root renamed a plain file over the device node.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "extmem/os/file.h"

namespace {

namespace fs = std::filesystem;

class OsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/extmem-os-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
  fs::path dir_;
};

// A plain path gets the text and no FILE.tmp remains.
TEST_F(OsFile, PlainFileIsWrittenWhole) {
  const fs::path p = dir_ / "out.json";
  ASSERT_TRUE(extmem::os::write_file_atomically(p, "hello\n"));
  EXPECT_EQ(slurp(p), "hello\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"out.json"});
  EXPECT_EQ(extmem::os::creatable_problem(p), "");
}

// A character device node (a private copy of /dev/null, made with mknod) stays a
// device node: the text is written into it, not renamed over it.
TEST_F(OsFile, CharacterDeviceIsWrittenInPlaceNotReplaced) {
  const fs::path p = dir_ / "null";
  if (::mknod(p.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) GTEST_SKIP() << "mknod: " << std::strerror(errno);
  EXPECT_EQ(extmem::os::creatable_problem(p), "");
  EXPECT_EQ(entries(), std::vector<std::string>{"null"});
  ASSERT_TRUE(extmem::os::write_file_atomically(p, "{}\n"));
  struct stat st {};
  ASSERT_EQ(::lstat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a file of mode " << std::oct << st.st_mode;
  EXPECT_EQ(entries(), std::vector<std::string>{"null"});
}

// A FIFO with a reader gets the text through the FIFO and stays a FIFO.
TEST_F(OsFile, FifoIsWrittenInPlace) {
  const fs::path p = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  ASSERT_TRUE(extmem::os::write_file_atomically(p, "abc"));
  char buf[8] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 3);
  EXPECT_STREQ(buf, "abc");
  ::close(reader);
  struct stat st {};
  ASSERT_EQ(::lstat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// A symlink keeps pointing at its file, which gets the new text.
TEST_F(OsFile, SymlinkIsKeptAndItsTargetReplaced) {
  const fs::path target = dir_ / "real.json", link = dir_ / "link.json";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  EXPECT_EQ(extmem::os::creatable_problem(link), "");
  ASSERT_TRUE(extmem::os::write_file_atomically(link, "new"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new");
  EXPECT_EQ(entries(), (std::vector<std::string>{"link.json", "real.json"}));
}

// A directory and a socket are refused, naming what is accepted; nothing is created.
TEST_F(OsFile, DirectoryAndSocketAreRefused) {
  fs::create_directory(dir_ / "sub");
  EXPECT_NE(extmem::os::creatable_problem(dir_ / "sub").find("accepted"), std::string::npos);
  const fs::path sock = dir_ / "sock";
  ASSERT_EQ(::mknod(sock.c_str(), S_IFSOCK | 0600, 0), 0) << std::strerror(errno);
  const std::string why = extmem::os::creatable_problem(sock);
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  EXPECT_NE(why.find("accepted"), std::string::npos) << why;
  EXPECT_FALSE(extmem::os::write_file_atomically(sock, "x"));
  EXPECT_EQ(entries(), (std::vector<std::string>{"sock", "sub"}));
}

}  // namespace
