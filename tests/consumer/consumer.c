/* A C program built against an installed kplay: the version matches the package, and a call
 * with a null buffer fails with a status and a message instead of crashing (no GPU needed). */
#include <kplay/kplay.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (strcmp(kplay_version(), KPLAY_EXPECTED_VERSION) != 0) {
    fprintf(stderr, "kplay_version() is %s, the package says %s\n", kplay_version(), KPLAY_EXPECTED_VERSION);
    return 1;
  }
  const kplay_status status = kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, NULL, NULL, 16, NULL);
  const char* message = kplay_last_error();
  if (status == KPLAY_OK || message == NULL || message[0] == '\0') {
    fprintf(stderr, "kplay_forward(NULL, NULL) returned %d with message '%s'\n", (int)status, message ? message : "");
    return 1;
  }
  printf("kplay %s from C: null buffers refused with status %d: %s\n", kplay_version(), (int)status, message);
  return 0;
}
