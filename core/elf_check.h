// ELF sanity check of a plugin file before dlopen.
//
// dlopen trusts the file it maps: a half-copied .so whose segments end past the end of the file
// makes the dynamic loader touch pages that do not exist, and the process dies of SIGBUS inside
// dlopen; a FIFO named *.so blocks dlopen's open() forever. check_plugin_file() looks first and
// says why a file must not be loaded, so the registry can refuse it with that reason and go on
// with the other plugins.
//
// What it checks: the path names a regular file (symlinks to one are fine), and its headers
// describe a shared object this process can load: ELF magic, class (32/64-bit) and byte order as
// this build, ELF version, e_machine equal to this build's architecture, type ET_DYN, a program
// header table inside the file, every segment's file range inside the file, a PT_LOAD and a
// PT_DYNAMIC segment, and the section header table (when there is one) inside the file.
//
// What it does not: it reads the ELF header and the program header table and nothing else (no
// symbol tables, no relocations), so it cannot tell a well-formed shared object from a broken one
// beyond that; dlopen still reports those. The file is opened non-blocking and only after stat()
// says it is a regular file (fstat() on the opened descriptor confirms it), so no entry of a
// plugin directory can make the check block. A file replaced between this check and dlopen is
// not caught (plugin directories are not expected to change under a running co_up).
//
// Thread-safe: no state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace co_up {

// The empty string when `path` may be handed to dlopen; otherwise one line saying why not, e.g.
// "truncated: segment 3 (LOAD) ends at byte 81234 but the file has 3000 bytes (a partial copy?)"
// or "built for aarch64, this co_up runs on x86-64". Never throws for a bad file.
std::string check_plugin_file(const std::filesystem::path& path);

// The ELF e_machine value of this build's architecture (EM_X86_64, EM_AARCH64, ...); 0 (EM_NONE)
// on an architecture this check does not know, in which case e_machine is not compared.
uint16_t host_elf_machine();

// "x86-64", "aarch64", "32-bit arm", ... or "ELF machine 243" for one without a name here.
std::string elf_machine_name(uint16_t machine);

}  // namespace co_up
