/*
 * ffkube's start gate: preloaded (LD_PRELOAD) into a tool the runner starts
 * before the tool's input exists. Its constructor runs once the dynamic
 * linker has loaded and relocated every library, before main(): it writes one
 * byte ("ready") to the descriptor named by FFKUBE_GATE_FD, then waits there
 * for one byte ("go"). Debian's ffprobe links ~215 shared libraries and
 * spends ~70 ms of a ~100 ms probe linking them; held at the gate while
 * ffmpeg writes the file, it probes in ~25 ms once let go.
 *
 * End of file instead of "go" (the runner cancelled, or died) ends the
 * process at once. Without FFKUBE_GATE_FD the library does nothing. It reads
 * no other input and touches nothing else.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void ffkube_start_gate(void) {
  const char *text = getenv("FFKUBE_GATE_FD");
  if (text == NULL || *text == '\0') return;
  char *end = NULL;
  long fd = strtol(text, &end, 10);
  if (*end != '\0' || fd < 3 || fd > 1024) _exit(126);
  unsetenv("FFKUBE_GATE_FD");
  unsetenv("LD_PRELOAD");
  char byte = 'r';
  ssize_t n;
  do n = write((int)fd, &byte, 1); while (n < 0 && errno == EINTR);
  if (n != 1) _exit(126);
  do n = read((int)fd, &byte, 1); while (n < 0 && errno == EINTR);
  if (n != 1) _exit(125);
  close((int)fd);
}
