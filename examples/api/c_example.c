/* Example: the C API. Opens a zoo network, runs one frame, streams frames through the pipeline
 * with a callback, and prints the outputs' checksums and the profile's size.
 *
 *   co_up_c_example NETWORK ORDER [FRAMES] [key=value ...]    (e.g. squeezenet BBLL 20 image-size=32)
 *
 * Every call returns NULL or an error the caller releases; the program checks each one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <co_up/co_up.h>

static int check(co_up_error* error, const char* what) {
  if (error == NULL) return 0;
  fprintf(stderr, "co_up: %s: %s: %s\n", co_up_error_code_of(error) == CO_UP_ERROR_INPUT ? "error" : "failed",
          what, co_up_error_message(error));
  co_up_error_release(error);
  return 1;
}

static double checksum(const co_up_result* result) {
  co_up_tensor_view out;
  double sum = 0;
  if (co_up_result_output(result, 0, &out) != NULL) return -1;
  for (size_t i = 0; i < out.element_count; ++i) sum += out.data[i] * (double)(i % 7 + 1);
  return sum;
}

struct Stream {
  uint64_t next; /* the frame expected next: results come in submission order */
  int out_of_order;
};

static void on_result(void* data, const co_up_result* result) {
  struct Stream* stream = (struct Stream*)data;
  if (co_up_result_frame(result) != stream->next ||
      (uintptr_t)co_up_result_user_data(result) != stream->next) {
    stream->out_of_order = 1;
  }
  printf("frame %llu checksum %.6f\n", (unsigned long long)co_up_result_frame(result), checksum(result));
  stream->next++;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s NETWORK ORDER [FRAMES] [key=value ...]\n", argv[0]);
    return 2;
  }
  if ((co_up_api_version() >> 16) != CO_UP_API_VERSION_MAJOR) {
    fprintf(stderr, "libco_up speaks API %u, this program was built for %u\n",
            (unsigned)(co_up_api_version() >> 16), (unsigned)CO_UP_API_VERSION_MAJOR);
    return 1;
  }
  int frames = 20;
  co_up_options* options = NULL;
  if (check(co_up_options_create(&options), "options")) return 1;
  if (check(co_up_options_set(options, "order", argv[2]), "order")) return 2;
  for (int i = 3; i < argc; ++i) {
    char* eq = strchr(argv[i], '=');
    if (eq == NULL) {
      frames = atoi(argv[i]);
      continue;
    }
    *eq = '\0';
    if (check(co_up_options_set(options, argv[i], eq + 1), argv[i])) return 2;
  }
  co_up_session* session = NULL;
  co_up_error* error = co_up_session_open_zoo(argv[1], options, &session);
  co_up_options_release(options);
  if (check(error, "open")) return 2;

  const int64_t* shape = NULL;
  size_t rank = 0;
  if (check(co_up_session_input_shape(session, 0, &shape, &rank), "input shape")) return 1;
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) count *= (size_t)shape[d];
  float* values = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) values[i] = (float)(i % 255) / 255.0f;
  co_up_tensor_view input = {sizeof(co_up_tensor_view), values, count, shape, rank};

  co_up_result* result = NULL;
  int failed = check(co_up_session_run(session, &input, 1, &result), "run");
  if (!failed) {
    printf("run: checksum %.6f\n", checksum(result));
    co_up_result_release(result);
  }

  struct Stream stream = {0, 0};
  failed = failed || check(co_up_session_set_callback(session, on_result, &stream), "callback");
  for (int f = 0; f < frames && !failed; ++f) {
    failed = check(co_up_session_submit(session, &input, 1, (void*)(uintptr_t)f), "submit");
  }
  failed = failed || check(co_up_session_drain(session), "drain");
  char* json = NULL;
  if (!failed && !check(co_up_session_profile_json(session, &json), "profile")) {
    printf("streamed %llu frames in order: %s; profile JSON %zu bytes\n", (unsigned long long)stream.next,
           stream.out_of_order ? "no" : "yes", strlen(json));
    co_up_string_release(json);
  }
  free(values);
  co_up_session_release(session);
  return failed || stream.out_of_order || stream.next != (uint64_t)frames ? 1 : 0;
}
