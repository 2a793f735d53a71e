#include "core/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

namespace co_up {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__i386__)
constexpr uint16_t kHostMachine = EM_386;
#elif defined(__arm__)
constexpr uint16_t kHostMachine = EM_ARM;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__s390x__)
constexpr uint16_t kHostMachine = EM_S390;
#else
constexpr uint16_t kHostMachine = EM_NONE;  // unknown here: e_machine is not compared
#endif

#if UINTPTR_MAX > 0xffffffffu
constexpr unsigned char kHostClass = ELFCLASS64;
using Ehdr = Elf64_Ehdr;
using Phdr = Elf64_Phdr;
using Shdr = Elf64_Shdr;
#else
constexpr unsigned char kHostClass = ELFCLASS32;
using Ehdr = Elf32_Ehdr;
using Phdr = Elf32_Phdr;
using Shdr = Elf32_Shdr;
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kHostData = ELFDATA2LSB;
#else
constexpr unsigned char kHostData = ELFDATA2MSB;
#endif

// Program header types that <elf.h> of older C libraries may lack.
constexpr uint32_t kPtGnuProperty = 0x6474e553;
constexpr uint16_t kEmLoongArch = 258;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errno_text(int error) { return std::strerror(error); }

// Reads exactly `size` bytes at `offset`; false on error or end of file.
bool read_at(int fd, uint64_t offset, void* out, size_t size) {
  auto* bytes = static_cast<unsigned char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string not_regular(mode_t mode) {
  const char* what = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "not a regular file";
  return std::string(what) + ", not a regular file (plugins are loaded from regular files only)";
}

std::string truncated(const std::string& what, uint64_t end, uint64_t size) {
  return "truncated: " + what + " ends at byte " + std::to_string(end) + " but the file has " +
         std::to_string(size) + " bytes (a partial copy?)";
}

std::string segment_type_name(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "LOAD";
    case PT_DYNAMIC: return "DYNAMIC";
    case PT_INTERP: return "INTERP";
    case PT_NOTE: return "NOTE";
    case PT_PHDR: return "PHDR";
    case PT_TLS: return "TLS";
    case PT_GNU_EH_FRAME: return "GNU_EH_FRAME";
    case PT_GNU_STACK: return "GNU_STACK";
    case PT_GNU_RELRO: return "GNU_RELRO";
    case kPtGnuProperty: return "GNU_PROPERTY";
    default: break;
  }
  char text[24];
  std::snprintf(text, sizeof(text), "type 0x%x", type);
  return text;
}

std::string elf_type_name(uint16_t type) {
  switch (type) {
    case ET_EXEC: return "an executable (ET_EXEC)";
    case ET_REL: return "a relocatable object, a .o (ET_REL)";
    case ET_CORE: return "a core dump (ET_CORE)";
    default: return "ELF type " + std::to_string(type);
  }
}

// e_machine of a file whose byte order is `data` (it is at the same offset in both classes).
uint16_t file_machine(const unsigned char* header, unsigned char data) {
  const unsigned lo = header[18], hi = header[19];
  return static_cast<uint16_t>(data == ELFDATA2LSB ? lo | hi << 8 : hi | lo << 8);
}

std::string check_headers(int fd, uint64_t size) {
  if (size == 0) return "truncated: the file is empty (a partial copy?)";
  unsigned char header[sizeof(Ehdr)] = {};
  const size_t have = size < sizeof(header) ? static_cast<size_t>(size) : sizeof(header);
  if (!read_at(fd, 0, header, have)) return "cannot read the ELF header: " + errno_text(errno);

  const size_t magic_bytes = have < SELFMAG ? have : SELFMAG;
  if (std::memcmp(header, ELFMAG, magic_bytes) != 0) {
    return "not an ELF file (it does not start with \\x7fELF); a plugin is a shared library";
  }
  if (have < EI_NIDENT) return truncated("the ELF identification", EI_NIDENT, size);
  const unsigned char elf_class = header[EI_CLASS];
  const unsigned char data = header[EI_DATA];
  if (elf_class != ELFCLASS32 && elf_class != ELFCLASS64) {
    return "malformed ELF header: class " + std::to_string(elf_class) + " is neither 32- nor 64-bit";
  }
  if (data != ELFDATA2LSB && data != ELFDATA2MSB) {
    return "malformed ELF header: byte order " + std::to_string(data) + " is neither little- nor "
           "big-endian";
  }
  // The architecture first: it is what a user got wrong (an arm64 .so on an x86-64 host, a 32-bit
  // arm .so on aarch64), and e_machine sits at the same offset in both classes.
  if (have >= 20 && kHostMachine != EM_NONE) {
    const uint16_t machine = file_machine(header, data);
    if (machine != kHostMachine) {
      return "built for " + elf_machine_name(machine) + ", this co_up runs on " +
             elf_machine_name(kHostMachine);
    }
  }
  if (elf_class != kHostClass) {
    return std::string("built as a ") + (elf_class == ELFCLASS64 ? "64" : "32") +
           "-bit ELF file, this co_up is " + (kHostClass == ELFCLASS64 ? "64" : "32") + "-bit";
  }
  if (data != kHostData) {
    return std::string("built for ") + (data == ELFDATA2LSB ? "little" : "big") +
           "-endian, this co_up runs " + (kHostData == ELFDATA2LSB ? "little" : "big") + "-endian";
  }
  if (header[EI_VERSION] != EV_CURRENT) {
    return "malformed ELF header: version " + std::to_string(header[EI_VERSION]);
  }
  if (have < sizeof(Ehdr)) return truncated("the ELF header", sizeof(Ehdr), size);

  Ehdr eh;
  std::memcpy(&eh, header, sizeof(eh));
  if (eh.e_type != ET_DYN) {
    return "not a shared library: " + elf_type_name(eh.e_type) +
           " (build the plugin as a shared module)";
  }
  if (eh.e_phnum == 0) return "no program headers: not a loadable shared library";
  if (eh.e_phnum == PN_XNUM) return "malformed ELF header: more program headers than e_phnum holds";
  if (eh.e_phentsize != sizeof(Phdr)) {
    return "malformed ELF header: program header size " + std::to_string(eh.e_phentsize) +
           ", expected " + std::to_string(sizeof(Phdr));
  }
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Phdr);
  if (eh.e_phoff > size || ph_bytes > size - eh.e_phoff) {
    const uint64_t end = eh.e_phoff > UINT64_MAX - ph_bytes ? UINT64_MAX : eh.e_phoff + ph_bytes;
    return truncated("the program header table", end, size);
  }
  std::vector<Phdr> segments(eh.e_phnum);
  if (!read_at(fd, eh.e_phoff, segments.data(), ph_bytes)) {
    return "cannot read the program headers: " + errno_text(errno);
  }
  bool any_load = false, any_dynamic = false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Phdr& ph = segments[i];
    any_load = any_load || ph.p_type == PT_LOAD;
    any_dynamic = any_dynamic || ph.p_type == PT_DYNAMIC;
    // Every segment with file contents, not only LOAD and DYNAMIC: the loader and the unwinder
    // read NOTE, TLS, GNU_PROPERTY and EH_FRAME contents through the mapping too, and a segment
    // outside its file is malformed whatever its type.
    if (ph.p_filesz == 0) continue;
    const std::string what = "segment " + std::to_string(i) + " (" + segment_type_name(ph.p_type) + ")";
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
      const uint64_t end = ph.p_offset > UINT64_MAX - ph.p_filesz ? UINT64_MAX
                                                                  : ph.p_offset + ph.p_filesz;
      return truncated(what, end, size);
    }
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz) {
      return "malformed: " + what + " has more bytes in the file (" + std::to_string(ph.p_filesz) +
             ") than in memory (" + std::to_string(ph.p_memsz) + ")";
    }
  }
  if (!any_load) return "no loadable segment (PT_LOAD): not a loadable shared library";
  if (!any_dynamic) return "no dynamic section (PT_DYNAMIC): not a dynamically loadable library";

  // Section headers are optional for loading (stripped files may drop them), but a table that
  // points past the end of the file is the other sign of a partial copy.
  if (eh.e_shoff != 0) {
    if (eh.e_shnum != 0 && eh.e_shentsize != sizeof(Shdr)) {
      return "malformed ELF header: section header size " + std::to_string(eh.e_shentsize) +
             ", expected " + std::to_string(sizeof(Shdr));
    }
    // e_shnum == 0 with a table means the count lives in section 0: that one at least must exist.
    const uint64_t sh_bytes = uint64_t{eh.e_shnum == 0 ? 1u : eh.e_shnum} * sizeof(Shdr);
    if (eh.e_shoff > size || sh_bytes > size - eh.e_shoff) {
      const uint64_t end = eh.e_shoff > UINT64_MAX - sh_bytes ? UINT64_MAX : eh.e_shoff + sh_bytes;
      return truncated("the section header table", end, size);
    }
  }
  return {};
}

}  // namespace

uint16_t host_elf_machine() { return kHostMachine; }

std::string elf_machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "32-bit x86";
    case EM_ARM: return "32-bit arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_PPC: return "32-bit ppc";
    case EM_S390: return "s390";
    case EM_MIPS: return "mips";
    case kEmLoongArch: return "loongarch";
    default: return "ELF machine " + std::to_string(machine);
  }
}

std::string check_plugin_file(const std::filesystem::path& path) {
  // stat first, so that a FIFO, socket or device is never opened at all (opening some devices
  // has side effects even non-blocking); stat follows symlinks, so a link to a plugin is fine.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) {
    const int error = errno;
    struct stat link {};
    const bool dangling = error == ENOENT && ::lstat(path.c_str(), &link) == 0 &&
                          S_ISLNK(link.st_mode);
    return "cannot stat: " + errno_text(error) + (dangling ? " (a dangling symbolic link)" : "");
  }
  if (!S_ISREG(before.st_mode)) return not_regular(before.st_mode);
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return "cannot open: " + errno_text(errno);
  // The entry may have been replaced since stat: what counts is the file now open.
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0) return "cannot stat: " + errno_text(errno);
  if (!S_ISREG(opened.st_mode)) return not_regular(opened.st_mode);
  return check_headers(fd.get(), static_cast<uint64_t>(opened.st_size));
}

}  // namespace co_up
