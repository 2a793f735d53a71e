// check_plugin_file() on crafted files: a well-formed shared-object header passes; every way a
// header can be wrong for this process is refused with a one-line reason that says what is wrong
// (truncation with the byte where the table or segment ends and the file's size, another
// architecture by name, another class or byte order, not a shared object); entries that are not
// regular files are refused without being opened, so a FIFO cannot block the check.
#include "core/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"

namespace co_up {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Shdr = ElfW(Shdr);

constexpr size_t kFileSize = 4096;

// A minimal shared object as far as the headers go: one LOAD over the whole file, a DYNAMIC
// inside it, three section headers at the end.
struct Crafted {
  Ehdr eh{};
  std::vector<Phdr> ph;
  size_t size = kFileSize;

  Crafted() {
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
    eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = host_elf_machine();
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Ehdr);
    eh.e_ehsize = sizeof(Ehdr);
    eh.e_phentsize = sizeof(Phdr);
    eh.e_shentsize = sizeof(Shdr);
    eh.e_shnum = 3;
    eh.e_shoff = kFileSize - 3 * sizeof(Shdr);
    Phdr load{};
    load.p_type = PT_LOAD;
    load.p_offset = 0;
    load.p_filesz = kFileSize;
    load.p_memsz = kFileSize;
    Phdr dynamic{};
    dynamic.p_type = PT_DYNAMIC;
    dynamic.p_offset = 3000;
    dynamic.p_filesz = 100;
    dynamic.p_memsz = 100;
    ph = {load, dynamic};
  }

  std::string bytes() const {
    Ehdr header = eh;
    header.e_phnum = static_cast<uint16_t>(ph.size());
    std::string out(std::max<size_t>(size, sizeof(Ehdr) + ph.size() * sizeof(Phdr)), '\0');
    std::memcpy(out.data(), &header, sizeof(header));
    if (eh.e_phoff + ph.size() * sizeof(Phdr) <= out.size()) {
      std::memcpy(out.data() + eh.e_phoff, ph.data(), ph.size() * sizeof(Phdr));
    }
    out.resize(size);
    return out;
  }
};

class ElfCheckTest : public ::testing::Test {
 protected:
  std::string check(const std::string& bytes) {
    return check_plugin_file(dir_.write("lib" + std::to_string(count_++) + ".so", bytes));
  }
  std::string check(const Crafted& c) { return check(c.bytes()); }

  test::ScratchDir dir_;
  int count_ = 0;
};

uint16_t other_machine() { return host_elf_machine() == EM_X86_64 ? EM_AARCH64 : EM_X86_64; }

TEST_F(ElfCheckTest, AWellFormedSharedObjectHeaderPasses) {
  EXPECT_EQ(check(Crafted{}), "");
}

TEST_F(ElfCheckTest, NoSectionHeaderTableIsFine) {
  Crafted c;
  c.eh.e_shoff = 0;
  c.eh.e_shnum = 0;
  EXPECT_EQ(check(c), "");
}

TEST_F(ElfCheckTest, AnEmptyFileIsTruncated) {
  EXPECT_EQ(check(""), "truncated: the file is empty (a partial copy?)");
}

TEST_F(ElfCheckTest, TextIsNotAnElfFile) {
  EXPECT_EQ(check("INPUT(libfoo.so.1)\n"),
            "not an ELF file (it does not start with \\x7fELF); a plugin is a shared library");
}

TEST_F(ElfCheckTest, ACutInsideTheIdentificationIsTruncated) {
  EXPECT_EQ(check(Crafted{}.bytes().substr(0, 3)),
            "truncated: the ELF identification ends at byte 16 but the file has 3 bytes (a partial "
            "copy?)");
  EXPECT_EQ(check(Crafted{}.bytes().substr(0, 10)),
            "truncated: the ELF identification ends at byte 16 but the file has 10 bytes (a partial "
            "copy?)");
}

TEST_F(ElfCheckTest, ACutInsideTheElfHeaderIsTruncated) {
  EXPECT_EQ(check(Crafted{}.bytes().substr(0, 40)),
            "truncated: the ELF header ends at byte " + std::to_string(sizeof(Ehdr)) +
                " but the file has 40 bytes (a partial copy?)");
}

TEST_F(ElfCheckTest, AnotherArchitectureIsNamed) {
  Crafted c;
  c.eh.e_machine = other_machine();
  EXPECT_EQ(check(c), "built for " + elf_machine_name(other_machine()) + ", this co_up runs on " +
                          elf_machine_name(host_elf_machine()));
}

TEST_F(ElfCheckTest, MachineNamesForTheArchitecturesCoUpBuildsFor) {
  EXPECT_EQ(elf_machine_name(EM_X86_64), "x86-64");
  EXPECT_EQ(elf_machine_name(EM_AARCH64), "aarch64");
  EXPECT_EQ(elf_machine_name(EM_ARM), "32-bit arm");
  EXPECT_EQ(elf_machine_name(4242), "ELF machine 4242");
#if defined(__x86_64__)
  EXPECT_EQ(host_elf_machine(), EM_X86_64);
#elif defined(__aarch64__)
  EXPECT_EQ(host_elf_machine(), EM_AARCH64);
#endif
}

TEST_F(ElfCheckTest, ThirtyTwoBitArmOnA64BitHostIsNamedByItsMachine) {
  if (sizeof(void*) != 8) GTEST_FAIL() << "this test assumes a 64-bit build";
  std::string bytes = Crafted{}.bytes();
  bytes[EI_CLASS] = ELFCLASS32;
  const uint16_t arm = EM_ARM;
  std::memcpy(&bytes[18], &arm, 2);
  EXPECT_EQ(check(bytes), "built for 32-bit arm, this co_up runs on " +
                              elf_machine_name(host_elf_machine()));
}

TEST_F(ElfCheckTest, AnotherClassForThisMachineIsRefused) {
  std::string bytes = Crafted{}.bytes();
  bytes[EI_CLASS] = sizeof(void*) == 8 ? ELFCLASS32 : ELFCLASS64;
  EXPECT_EQ(check(bytes), sizeof(void*) == 8
                              ? "built as a 32-bit ELF file, this co_up is 64-bit"
                              : "built as a 64-bit ELF file, this co_up is 32-bit");
}

TEST_F(ElfCheckTest, AnotherByteOrderIsRefused) {
  std::string bytes = Crafted{}.bytes();
  const bool little = bytes[EI_DATA] == ELFDATA2LSB;
  bytes[EI_DATA] = little ? ELFDATA2MSB : ELFDATA2LSB;
  std::swap(bytes[18], bytes[19]);  // e_machine as that byte order writes this machine
  EXPECT_EQ(check(bytes), little ? "built for big-endian, this co_up runs little-endian"
                                 : "built for little-endian, this co_up runs big-endian");
}

TEST_F(ElfCheckTest, AMalformedIdentificationIsRefused) {
  std::string bytes = Crafted{}.bytes();
  bytes[EI_CLASS] = 7;
  EXPECT_EQ(check(bytes), "malformed ELF header: class 7 is neither 32- nor 64-bit");
  bytes = Crafted{}.bytes();
  bytes[EI_VERSION] = 9;
  EXPECT_EQ(check(bytes), "malformed ELF header: version 9");
}

TEST_F(ElfCheckTest, ExecutablesAndObjectFilesAreNotSharedLibraries) {
  Crafted c;
  c.eh.e_type = ET_EXEC;
  EXPECT_EQ(check(c),
            "not a shared library: an executable (ET_EXEC) (build the plugin as a shared module)");
  c.eh.e_type = ET_REL;
  EXPECT_EQ(check(c), "not a shared library: a relocatable object, a .o (ET_REL) (build the plugin "
                      "as a shared module)");
}

TEST_F(ElfCheckTest, ProgramHeadersMustExistAndHaveTheRightSize) {
  Crafted c;
  c.ph.clear();
  EXPECT_EQ(check(c), "no program headers: not a loadable shared library");
  Crafted d;
  d.eh.e_phentsize = sizeof(Phdr) - 8;
  EXPECT_EQ(check(d), "malformed ELF header: program header size " +
                          std::to_string(sizeof(Phdr) - 8) + ", expected " +
                          std::to_string(sizeof(Phdr)));
}

TEST_F(ElfCheckTest, AProgramHeaderTablePastTheEndIsTruncated) {
  Crafted c;
  c.eh.e_phoff = kFileSize - sizeof(Phdr);  // two entries: the second ends past the file
  EXPECT_EQ(check(c), "truncated: the program header table ends at byte " +
                          std::to_string(kFileSize + sizeof(Phdr)) +
                          " but the file has 4096 bytes (a partial copy?)");
  Crafted d;
  d.size = sizeof(Ehdr) + sizeof(Phdr) + 10;  // cut inside the second program header
  EXPECT_EQ(check(d), "truncated: the program header table ends at byte " +
                          std::to_string(sizeof(Ehdr) + 2 * sizeof(Phdr)) + " but the file has " +
                          std::to_string(d.size) + " bytes (a partial copy?)");
}

TEST_F(ElfCheckTest, ASegmentPastTheEndIsTruncatedNamingItsIndexAndType) {
  Crafted c;
  c.ph[0].p_filesz = 81234;
  c.ph[0].p_memsz = 81234;
  EXPECT_EQ(check(c), "truncated: segment 0 (LOAD) ends at byte 81234 but the file has 4096 bytes "
                      "(a partial copy?)");
  Crafted d;
  d.ph[1].p_offset = 4000;  // 4000 + 100 > 4096
  EXPECT_EQ(check(d), "truncated: segment 1 (DYNAMIC) ends at byte 4100 but the file has 4096 "
                      "bytes (a partial copy?)");
}

TEST_F(ElfCheckTest, AnOffsetThatWouldOverflowIsTruncatedNotWrapped) {
  Crafted c;
  c.ph[1].p_offset = static_cast<decltype(c.ph[1].p_offset)>(-16);
  c.ph[1].p_filesz = 100;
  const std::string reason = check(c);
  EXPECT_EQ(reason.rfind("truncated: segment 1 (DYNAMIC) ends at byte ", 0), 0u) << reason;
}

TEST_F(ElfCheckTest, EverySegmentWithContentsMustBeInsideTheFile) {
  Crafted c;
  Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = 4090;
  note.p_filesz = 32;
  c.ph.push_back(note);
  EXPECT_EQ(check(c), "truncated: segment 2 (NOTE) ends at byte 4122 but the file has 4096 bytes "
                      "(a partial copy?)");
  // GNU_STACK has no file contents: its offset does not matter.
  Crafted d;
  Phdr stack{};
  stack.p_type = PT_GNU_STACK;
  stack.p_offset = 1u << 30;
  d.ph.push_back(stack);
  EXPECT_EQ(check(d), "");
}

TEST_F(ElfCheckTest, ALoadSegmentLargerInTheFileThanInMemoryIsMalformed) {
  Crafted c;
  c.ph[0].p_memsz = 100;
  EXPECT_EQ(check(c), "malformed: segment 0 (LOAD) has more bytes in the file (4096) than in "
                      "memory (100)");
}

TEST_F(ElfCheckTest, LoadAndDynamicSegmentsAreRequired) {
  Crafted c;
  c.ph.erase(c.ph.begin() + 1);
  EXPECT_EQ(check(c), "no dynamic section (PT_DYNAMIC): not a dynamically loadable library");
  Crafted d;
  d.ph.erase(d.ph.begin());
  EXPECT_EQ(check(d), "no loadable segment (PT_LOAD): not a loadable shared library");
}

TEST_F(ElfCheckTest, ASectionHeaderTablePastTheEndIsTruncated) {
  Crafted c;
  c.size = kFileSize - 100;  // the segments shrink with it: only the section table is cut
  c.ph[0].p_filesz = c.size;
  c.ph[0].p_memsz = kFileSize;
  EXPECT_EQ(check(c), "truncated: the section header table ends at byte 4096 but the file has " +
                          std::to_string(c.size) + " bytes (a partial copy?)");
  Crafted d;
  d.eh.e_shentsize = 12;
  EXPECT_EQ(check(d), "malformed ELF header: section header size 12, expected " +
                          std::to_string(sizeof(Shdr)));
}

// Entries that are not regular files: refused by kind, never opened (a FIFO without a writer
// would block an open for reading, and a blocking open is what hung co_up).
TEST_F(ElfCheckTest, AFifoIsRefusedWithoutBlocking) {
  const auto fifo = dir_ / "x.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(check_plugin_file(fifo),
            "a FIFO (named pipe), not a regular file (plugins are loaded from regular files only)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ElfCheckTest, DirectoriesSocketsAndDevicesAreRefusedByKind) {
  const auto directory = dir_ / "d.so";
  std::filesystem::create_directory(directory);
  EXPECT_EQ(check_plugin_file(directory),
            "a directory, not a regular file (plugins are loaded from regular files only)");
  EXPECT_EQ(check_plugin_file("/dev/null"),
            "a character device, not a regular file (plugins are loaded from regular files only)");

  const auto socket_path = dir_ / "s.so";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.string().size(), sizeof(address.sun_path));
  std::strcpy(address.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(check_plugin_file(socket_path),
            "a socket, not a regular file (plugins are loaded from regular files only)");
  ::close(fd);
}

TEST_F(ElfCheckTest, SymlinksAreFollowed) {
  dir_.write("real.so", Crafted{}.bytes());
  std::filesystem::create_symlink("real.so", dir_ / "link.so");
  EXPECT_EQ(check_plugin_file(dir_ / "link.so"), "");
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("fifo", dir_ / "fifo_link.so");
  EXPECT_EQ(check_plugin_file(dir_ / "fifo_link.so"),
            "a FIFO (named pipe), not a regular file (plugins are loaded from regular files only)");
  std::filesystem::create_symlink("nowhere.so", dir_ / "dangling.so");
  EXPECT_EQ(check_plugin_file(dir_ / "dangling.so"),
            "cannot stat: No such file or directory (a dangling symbolic link)");
}

}  // namespace
}  // namespace co_up
