/*
 * co_up — public C API: the C++ API (<co_up/co_up.hpp>) behind opaque handles, for C programs and
 * language bindings. Binary-stable within a major version.
 *
 * Conventions, stated once:
 *  - C99. Every fallible function returns `co_up_error*`: NULL means success; a non-NULL error is
 *    owned by the caller, who reads co_up_error_code()/co_up_error_message() and releases it with
 *    co_up_error_release(). No C++ exception crosses this interface. A NULL handle or out-pointer
 *    argument is an error of code CO_UP_ERROR_INPUT, never a crash.
 *  - Every object created here (options, session, result, error, string) has one release function;
 *    releasing NULL does nothing.
 *  - Tensors are dense float32, row-major. Inputs are passed as co_up_tensor_view structs the
 *    caller owns: co_up_session_run reads them in place during the call (no copy); submit and
 *    try_submit copy them before they return. Nothing is kept after a call returns. Outputs are views into a
 *    co_up_result, valid until that result is released.
 *  - Threading: as the C++ Session (one thread at a time, except that submit and wait_result may
 *    run on two threads at once, and the callback runs on a thread of the session).
 *  - Versions: CO_UP_API_VERSION_MAJOR/MINOR are what this header declares; co_up_api_version()
 *    what the loaded library implements. A program must check that the majors are equal.
 */
#ifndef CO_UP_CO_UP_H_
#define CO_UP_CO_UP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CO_UP_API_VERSION_MAJOR 1u
#define CO_UP_API_VERSION_MINOR 1u

#if defined(_WIN32)
#define CO_UP_C_API
#else
#define CO_UP_C_API __attribute__((visibility("default")))
#endif

/* (major << 16) | minor of the loaded library. */
CO_UP_C_API uint32_t co_up_api_version(void);

/* ---------------------------------------------------------------------------------------------- */
/* Errors                                                                                          */

typedef enum co_up_error_code {
  CO_UP_ERROR_RUNTIME = 1, /* a failure doing valid work: plugin, device, OS (the CLI's exit 1) */
  CO_UP_ERROR_INPUT = 2    /* bad options, files, models, shapes or call order (the CLI's exit 2) */
} co_up_error_code;

typedef struct co_up_error co_up_error;

CO_UP_C_API co_up_error_code co_up_error_code_of(const co_up_error* error);
/* One line, as the command line prints it after "co_up: error: "; owned by the error. */
CO_UP_C_API const char* co_up_error_message(const co_up_error* error);
CO_UP_C_API void co_up_error_release(co_up_error* error);

/* ---------------------------------------------------------------------------------------------- */
/* Tensors                                                                                         */

typedef struct co_up_tensor_view {
  uint32_t struct_size;   /* sizeof(co_up_tensor_view) as the creator compiled it */
  const float* data;      /* element_count values; not owned */
  size_t element_count;
  const int64_t* shape;   /* rank dimensions; not owned */
  size_t rank;
} co_up_tensor_view;

/* ---------------------------------------------------------------------------------------------- */
/* Options: key/value strings named as the command line's options without dashes: "order", "mode",
 * "split", "platform", "plugins", "sysfs-root", "frequency", "dvfs", "profile", "buffers",
 * "share-boundaries", "threads", "cores", "threads_little", "cores_little", "image-size", "seed", "data", "units",
 * "input-shape", "queue-capacity" (docs/api.md). */

typedef struct co_up_options co_up_options;

CO_UP_C_API co_up_error* co_up_options_create(co_up_options** out_options);
/* Copies both strings. An unknown key or malformed value is a CO_UP_ERROR_INPUT naming it. */
CO_UP_C_API co_up_error* co_up_options_set(co_up_options* options, const char* key, const char* value);
CO_UP_C_API void co_up_options_release(co_up_options* options);

/* ---------------------------------------------------------------------------------------------- */
/* Results: one frame's outputs                                                                   */

typedef struct co_up_result co_up_result;

CO_UP_C_API uint64_t co_up_result_frame(const co_up_result* result);
CO_UP_C_API void* co_up_result_user_data(const co_up_result* result);
CO_UP_C_API size_t co_up_result_output_count(const co_up_result* result);
/* Fills *out_view with output `index`; the view is valid until the result is released. */
CO_UP_C_API co_up_error* co_up_result_output(const co_up_result* result, size_t index,
                                             co_up_tensor_view* out_view);
CO_UP_C_API void co_up_result_release(co_up_result* result);

/* ---------------------------------------------------------------------------------------------- */
/* Sessions                                                                                        */

typedef struct co_up_session co_up_session;

/* `options` may be NULL (defaults); it is not kept. */
CO_UP_C_API co_up_error* co_up_session_open_model(const char* onnx_path, const co_up_options* options,
                                                  co_up_session** out_session);
CO_UP_C_API co_up_error* co_up_session_open_zoo(const char* name, const co_up_options* options,
                                                co_up_session** out_session);
/* Stops frames in flight, joins the session's threads, releases devices, restores DVFS. */
CO_UP_C_API void co_up_session_release(co_up_session* session);

CO_UP_C_API size_t co_up_session_input_count(const co_up_session* session);
CO_UP_C_API size_t co_up_session_output_count(const co_up_session* session);
/* Shape of input/output `index`: *out_shape points into the session (valid while it lives). */
CO_UP_C_API co_up_error* co_up_session_input_shape(const co_up_session* session, size_t index,
                                                   const int64_t** out_shape, size_t* out_rank);
CO_UP_C_API co_up_error* co_up_session_output_shape(const co_up_session* session, size_t index,
                                                    const int64_t** out_shape, size_t* out_rank);

/* One frame, synchronously. *out_result is owned by the caller (co_up_result_release). */
CO_UP_C_API co_up_error* co_up_session_run(co_up_session* session, const co_up_tensor_view* inputs,
                                           size_t input_count, co_up_result** out_result);

/* Streaming. The callback, if set (before the first submit), receives every result in submission
 * order on a thread of the session (the processor thread that completed the frame: its time adds
 * to that stage's); `result` is borrowed for the call. Without a callback, results are taken with
 * co_up_session_wait_result. */
typedef void (*co_up_result_callback)(void* callback_data, const co_up_result* result);
CO_UP_C_API co_up_error* co_up_session_set_callback(co_up_session* session,
                                                    co_up_result_callback callback,
                                                    void* callback_data);
/* Blocks while queue-capacity frames are in flight; returns once the frame is queued. */
CO_UP_C_API co_up_error* co_up_session_submit(co_up_session* session, const co_up_tensor_view* inputs,
                                              size_t input_count, void* user_data);
/* Never blocks, for any number of inputs: *out_accepted = 1 when queued, 0 when the queue was
 * full (nothing taken). */
CO_UP_C_API co_up_error* co_up_session_try_submit(co_up_session* session,
                                                  const co_up_tensor_view* inputs,
                                                  size_t input_count, void* user_data,
                                                  int* out_accepted);
/* The next result in submission order (blocks until complete); owned by the caller. */
CO_UP_C_API co_up_error* co_up_session_wait_result(co_up_session* session, co_up_result** out_result);
/* Waits until every submitted frame was handed back or completed; ends the stream. */
CO_UP_C_API co_up_error* co_up_session_drain(co_up_session* session);

/* The last run's or drained stream's profile as JSON (as --profile-out writes it); release the
 * string with co_up_string_release. */
CO_UP_C_API co_up_error* co_up_session_profile_json(const co_up_session* session, char** out_json);
CO_UP_C_API void co_up_string_release(char* text);

#ifdef __cplusplus
}
#endif

#endif /* CO_UP_CO_UP_H_ */
