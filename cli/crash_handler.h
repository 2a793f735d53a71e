// Crash handler of the co_up binary: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and SIGSYS;
// and the other signals whose default action ends the process without an orderly stop (SIGUSR1,
// SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR), so that every catchable
// way out restores DVFS (StopSignal has SIGINT, SIGTERM, SIGHUP and SIGQUIT; SIGPIPE is ignored:
// a closed stdout fails writes instead of ending the run with the clocks changed).
//
// Plugins are trusted code in co_up's process; when co_up dies from one of these signals the
// handler writes one line saying whose code it was (core/plugin.h: plugin_call_in_progress()),
//   co_up: crashed with SIGSEGV inside plugin 'opencl' (device_create); plugins run as trusted
//   code in co_up's process — report this to the plugin's author
// or "... inside co_up; ..." outside plugin calls, restores DVFS (power::
// restore_dvfs_async_signal_safe), then hands the signal on to the disposition that was there
// before: the default action (the process dies by the signal, a core dump where enabled, so the
// exit status stays honest) or a sanitizer's handler, whose report then follows. A fault from
// an instruction is handed on by returning to it; a signal sent by kill/raise/abort is raised
// again. Everything in the handler is async-signal-safe. The non-crash signals write
//   co_up: ended by SIGUSR1 without an orderly stop (...); DVFS is restored
// and are installed only where the disposition is still the default (a plugin or library that
// handles one of them keeps it).
//
// install_crash_handler() runs once, early in main(); it gives the calling thread an alternate
// signal stack (unless one is set already — AddressSanitizer's) so a stack overflow there is
// reported too. Other threads have none: a stack overflow on one of them dies without the line.
#pragma once

namespace co_up::cli {

void install_crash_handler();

}  // namespace co_up::cli
