/*
 * co_up backend plugin ABI — the whole contract between the co_up runtime and a backend.
 *
 * A backend is a shared object in a plugins directory exporting one function:
 *
 *     const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
 *                                                  uint32_t host_abi_minor);
 *
 * It returns a pointer to a static, immutable table, or NULL when it cannot serve a host of that
 * ABI major version. Compatibility rule: majors must be equal; minors only append, so any minor
 * loads. A plugin older than the host: the host uses only what that minor defines, checked through
 * `struct_size`. A plugin newer than the host: the host reads only the members it knows, and the
 * plugin, which was told the host's minor, must not rely on anything newer.
 * Every member of co_up_plugin_api is required (non-NULL) except where it says "Optional".
 *
 * <co_up/plugin_helpers.h> has optional header-only helpers (statuses, attribute lookup).
 *
 * Conventions, stated once:
 *  - C99, C types only. Every struct starts with `struct_size` (sizeof as the creator compiled it);
 *    structs grow only by appending members. Creators zero-initialise structs before filling them.
 *    Arrays of such structs (tensors, nodes) are walked with a stride of the first element's
 *    `struct_size`, so that an older or newer peer still finds element i. The small pair-like
 *    structs without `struct_size` (co_up_option, co_up_attr) are frozen: they never grow.
 *  - Every fallible call returns `co_up_status*`: NULL means success; a non-NULL status is owned by
 *    the caller, who releases it with `api->status_release`. Nothing throws across this boundary.
 *  - Objects form a chain: factory (one per loaded plugin) -> device (one per processor letter that
 *    uses this backend, e.g. the CPU backend serves both B and L with different cores) -> compiled
 *    sub-graph. Each has an explicit release; children are released before their parents.
 *  - Pointers passed *into* a call are valid only for the duration of that call unless stated
 *    otherwise; the plugin copies what it must keep (weights are packed at compile time).
 *  - Threading: a factory and a device may be used from several threads at once for *different*
 *    compiled sub-graphs; one compiled sub-graph is used by at most one thread at a time.
 *  - Options are key/value string pairs, so new options never change a struct layout.
 */
#ifndef CO_UP_PLUGIN_ABI_H_
#define CO_UP_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CO_UP_ABI_VERSION_MAJOR 1u
#define CO_UP_ABI_VERSION_MINOR 3u
/* History: 1.0 first release; 1.1 appends co_up_run_hooks.layer_device_time; 1.2 appends
 * co_up_plugin_api.boundary_layouts; 1.3 appends co_up_subgraph_desc.io_memory/io_memory_count
 * and co_up_plugin_api.external_io (sub-graph inputs and outputs in runtime-owned memory). */

/* Name of the one exported entry point, for dlsym. */
#define CO_UP_PLUGIN_ENTRY_POINT "co_up_plugin_get_api"

#if defined(_WIN32)
#define CO_UP_PLUGIN_EXPORT __declspec(dllexport)
#else
#define CO_UP_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Status                                                                                          */

typedef enum co_up_status_code {
  CO_UP_STATUS_OK = 0,
  CO_UP_STATUS_INVALID_ARGUMENT = 1, /* the caller passed something malformed */
  CO_UP_STATUS_UNSUPPORTED = 2,      /* valid, but this backend cannot do it */
  CO_UP_STATUS_NO_DEVICE = 3,        /* the plugin declines: its hardware/library is absent */
  CO_UP_STATUS_OUT_OF_MEMORY = 4,
  CO_UP_STATUS_INVALID_STATE = 5, /* call order violated, e.g. run before compile finished */
  CO_UP_STATUS_RUNTIME_ERROR = 6  /* the device or vendor library failed */
} co_up_status_code;

typedef struct co_up_status {
  uint32_t struct_size;
  int32_t code;        /* a co_up_status_code */
  const char* message; /* one line, says what failed and what to do; owned by the status */
} co_up_status;

/* ---------------------------------------------------------------------------------------------- */
/* Options                                                                                         */

typedef struct co_up_option {
  const char* key;
  const char* value;
} co_up_option;

/* ---------------------------------------------------------------------------------------------- */
/* Sub-graph description (what the runtime asks a backend to compile)                              */

typedef enum co_up_dtype {
  CO_UP_DTYPE_F32 = 0,
  CO_UP_DTYPE_F16 = 1,
  CO_UP_DTYPE_I8 = 2,
  CO_UP_DTYPE_U8 = 3,
  CO_UP_DTYPE_I32 = 4,
  CO_UP_DTYPE_I64 = 5
} co_up_dtype;

/* The memory order of a tensor's elements. `dims` are the logical (N, C, H, W) of a 4-D tensor
 * whatever the layout; NHWC stores channels innermost (PyTorch's "channels_last"). The runtime
 * uses NHWC only on 4-D f32 sub-graph inputs and outputs passed between two backends that both
 * declare it in co_up_plugin_api.boundary_layouts (since 1.2); everything else is NCHW or ANY. */
typedef enum co_up_layout {
  CO_UP_LAYOUT_ANY = 0, /* no spatial meaning (vectors, weights of fully connected layers) */
  CO_UP_LAYOUT_NCHW = 1,
  CO_UP_LAYOUT_NHWC = 2
} co_up_layout;

typedef struct co_up_tensor_desc {
  uint32_t struct_size;
  const char* name;
  int32_t dtype;  /* co_up_dtype */
  int32_t layout; /* co_up_layout */
  uint32_t rank;
  const int64_t* dims; /* `rank` entries, outermost first */
  /* Quantisation (int8/uint8 only): per-tensor when `quant_count` == 1, per-channel along
   * `quant_axis` otherwise. NULL/0 for float tensors. real = scale * (q - zero_point). */
  const float* quant_scales;
  const int32_t* quant_zero_points;
  uint32_t quant_count;
  int32_t quant_axis;
  /* Constant data (weights, biases) or NULL for activations. Valid only during compile. */
  const void* data;
  uint64_t data_bytes;
} co_up_tensor_desc;

typedef enum co_up_attr_type {
  CO_UP_ATTR_INT = 0,
  CO_UP_ATTR_FLOAT = 1,
  CO_UP_ATTR_INTS = 2,
  CO_UP_ATTR_FLOATS = 3,
  CO_UP_ATTR_STRING = 4
} co_up_attr_type;

typedef struct co_up_attr {
  const char* name;
  int32_t type; /* co_up_attr_type: selects which member below is meaningful */
  int64_t i;
  double f;
  const int64_t* ints;
  const float* floats;
  uint64_t count; /* entries in ints/floats */
  const char* s;
} co_up_attr;

/* Marks an absent optional input (e.g. a convolution without bias). */
#define CO_UP_NO_TENSOR UINT32_MAX

typedef struct co_up_node_desc {
  uint32_t struct_size;
  const char* name;
  /* Operator name and attribute names as documented in graph/op.h (ONNX-like spelling:
   * "Conv", "FullyConnected", "MaxPool", "Relu", ...). Strings keep the ABI stable as ops are
   * added; backends compare them at compile time only. */
  const char* op_type;
  uint32_t layer; /* index of the layer unit (one letter of --order) this node belongs to */
  const uint32_t* inputs; /* indices into co_up_subgraph_desc.tensors, or CO_UP_NO_TENSOR */
  uint32_t input_count;
  const uint32_t* outputs;
  uint32_t output_count;
  const co_up_attr* attrs;
  uint32_t attr_count;
} co_up_node_desc;

/* Since 1.3. Runtime-owned host memory that a sub-graph input or output lives in, so that nothing is
 * copied across the boundary: the producing sub-graph writes the tensor there and every reading
 * sub-graph reads it there (processors that share memory). Element (pixel p, channel c) of the
 * 4-D NHWC tensor is host_ptr[p * pixel_stride + channel_offset + c] (floats).
 *  - pixel_stride 0 (or the tensor's channel count) and channel_offset 0: the tensor alone, dense.
 *  - pixel_stride > channels: the tensor is the channel slice [channel_offset, channel_offset +
 *    channels) of a wider tensor, the output of a channel Concat. An *output* given so is the
 *    result of a Conv node that no node of the sub-graph reads: the backend writes it straight
 *    into its slice. An *input* given so is read only by one channel Concat node of the
 *    sub-graph, and every input of that Concat is either such a slice of the same memory or a
 *    Conv result only that Concat reads: the backend then takes host_ptr as the Concat's output
 *    (written in place by the producers) and does not run the Concat.
 * Owned by the runtime, 64-byte aligned, valid from compiled_create until compiled_release; the
 * runtime neither reads nor writes it while the sub-graph runs, and never maps or binds such an
 * input or output. Passed only to backends that declare the case in co_up_plugin_api.external_io,
 * only for 4-D f32 tensors described in CO_UP_LAYOUT_NHWC. A backend that cannot honour an entry
 * fails compiled_create with CO_UP_STATUS_UNSUPPORTED. */
typedef struct co_up_io_memory {
  uint32_t struct_size;
  int32_t direction; /* co_up_io_direction */
  uint32_t index;    /* position in co_up_subgraph_desc.inputs / outputs */
  void* host_ptr;
  uint64_t channel_offset;
  uint64_t pixel_stride;
} co_up_io_memory;

/* Bits of co_up_plugin_api.external_io. */
#define CO_UP_EXTERNAL_IO_DENSE (1u << 0)         /* dense inputs and outputs */
#define CO_UP_EXTERNAL_IO_CHANNEL_SLICE (1u << 1) /* Conv outputs into / Concat inputs from slices */

typedef struct co_up_subgraph_desc {
  uint32_t struct_size;
  const char* graph_name;
  uint32_t first_layer; /* layer units covered, inclusive; accelerators name partitions by them */
  uint32_t last_layer;
  const co_up_tensor_desc* tensors;
  uint32_t tensor_count;
  const co_up_node_desc* nodes; /* topological order */
  uint32_t node_count;
  const uint32_t* inputs; /* tensor indices the runtime fills before each run */
  uint32_t input_count;
  const uint32_t* outputs; /* tensor indices the runtime reads after each run */
  uint32_t output_count;
  /* Since 1.3 (check struct_size; may be NULL with count 0): inputs and outputs in runtime-owned
   * memory (co_up_io_memory), walked with the stride of the first entry's struct_size. The
   * pointers in the entries outlive the call; the array itself does not. */
  const co_up_io_memory* io_memory;
  uint32_t io_memory_count;
} co_up_subgraph_desc;

/* ---------------------------------------------------------------------------------------------- */
/* Capability query                                                                                */

typedef struct co_up_node_support {
  uint32_t struct_size;
  int32_t supported; /* 1 or 0 */
  /* Why not (or a note on how), NUL-terminated, written by the plugin into this buffer. */
  char reason[256];
} co_up_node_support;

/* ---------------------------------------------------------------------------------------------- */
/* Run-time hooks                                                                                  */

/* Called by the backend on the thread that called `compiled_run`, around each layer unit of the
 * sub-graph, in execution order. Per-node backends call them for every layer; whole-partition
 * backends (accelerators) call layer_begin(first_layer) and layer_end(last_layer) once. The runtime
 * uses them for per-layer timing, DVFS requests and GPIO tags; they are cheap and never fail. */
typedef struct co_up_run_hooks {
  uint32_t struct_size;
  void* user_data;
  void (*layer_begin)(void* user_data, uint32_t layer);
  void (*layer_end)(void* user_data, uint32_t layer);
  /* Since 1.1, optional (check struct_size; may be NULL): a backend with its own device timer
   * (OpenCL event profiling, an accelerator's counters) reports, right after layer_end(layer),
   * how long the device itself worked on that layer (or partition), in nanoseconds. The runtime
   * records it next to the host-side layer time, so transfers, host overhead and device work
   * can be told apart. */
  void (*layer_device_time)(void* user_data, uint32_t layer, uint64_t device_ns);
} co_up_run_hooks;

/* ---------------------------------------------------------------------------------------------- */
/* Opaque handles                                                                                  */

typedef struct co_up_factory co_up_factory;
typedef struct co_up_device co_up_device;
typedef struct co_up_compiled co_up_compiled;

typedef enum co_up_backend_kind {
  CO_UP_BACKEND_CPU = 0,
  CO_UP_BACKEND_GPU = 1,
  CO_UP_BACKEND_ACCELERATOR = 2 /* NPU/DSP: compiles a whole partition into one node */
} co_up_backend_kind;

typedef enum co_up_io_direction { CO_UP_IO_INPUT = 0, CO_UP_IO_OUTPUT = 1 } co_up_io_direction;

/* ---------------------------------------------------------------------------------------------- */
/* The function table                                                                              */

typedef struct co_up_plugin_api {
  uint32_t struct_size;
  uint32_t abi_major; /* the ABI the plugin was built against */
  uint32_t abi_minor;
  const char* name;        /* backend name the platform JSON refers to, e.g. "cpu-reference" */
  const char* version;     /* the plugin's own version string */
  const char* description; /* one line for --list-plugins */
  int32_t kind;            /* co_up_backend_kind */

  void (*status_release)(co_up_status* status);

  /* Creates the plugin-wide factory. A plugin whose hardware or vendor library is absent returns
   * CO_UP_STATUS_NO_DEVICE with the reason; the runtime lists it as declined and goes on. */
  co_up_status* (*factory_create)(const co_up_option* options, uint32_t option_count,
                                  co_up_factory** out_factory);
  void (*factory_release)(co_up_factory* factory);

  /* One device per processor letter. Options the runtime always passes: "processor" (letter),
   * "cores" (comma-separated CPU ids the host thread and any workers may use), "threads". Unknown
   * options are ignored. */
  co_up_status* (*device_create)(co_up_factory* factory, const co_up_option* options,
                                 uint32_t option_count, co_up_device** out_device);
  void (*device_release)(co_up_device* device);

  /* Can `graph->nodes[node_index]` run here? Never fails for an unsupported node: it answers 0
   * with a reason. */
  co_up_status* (*device_query_node)(co_up_device* device, const co_up_subgraph_desc* graph,
                                     uint32_t node_index, co_up_node_support* out_support);

  /* Compiles a sub-graph: validates, packs weights, allocates every tensor including the
   * input/output buffers. After this returns, the plugin keeps no pointer into `graph`. */
  co_up_status* (*compiled_create)(co_up_device* device, const co_up_subgraph_desc* graph,
                                   co_up_compiled** out_compiled);
  void (*compiled_release)(co_up_compiled* compiled);

  /* Maps input or output `index` (position in graph->inputs / graph->outputs) into host memory.
   * The pointer is valid until the matching unmap; inputs are mapped for writing, outputs for
   * reading. Unified-memory devices map without copying. A backend may return the same pointer
   * every time; the runtime must not assume it. */
  co_up_status* (*compiled_map)(co_up_compiled* compiled, int32_t direction, uint32_t index,
                                void** out_host_ptr);
  co_up_status* (*compiled_unmap)(co_up_compiled* compiled, int32_t direction, uint32_t index);

  /* Optional (may be NULL): make input `index` read directly from host memory the runtime owns,
   * for the next run only, so a receiver's buffer feeds the sub-graph without a copy. Returns
   * CO_UP_STATUS_UNSUPPORTED when the memory cannot be used directly; the runtime then maps and
   * copies. The backend must not write to `host_ptr`. */
  co_up_status* (*compiled_bind_input)(co_up_compiled* compiled, uint32_t index,
                                       const void* host_ptr);

  /* Runs the sub-graph once, synchronously: inputs must be written (or bound) before, outputs
   * are complete when it returns. `hooks` may be NULL. */
  co_up_status* (*compiled_run)(co_up_compiled* compiled, const co_up_run_hooks* hooks);

  /* Since 1.2 (check struct_size; absent means NCHW only): bit (1u << CO_UP_LAYOUT_NHWC) set
   * when compiled sub-graphs accept 4-D f32 inputs and outputs in NHWC memory order, i.e. the
   * backend holds activations channels-last anyway. Between two such backends the runtime then
   * passes boundary tensors in NHWC and neither side transposes (a Sender/Receiver transfer
   * becomes a copy). NCHW must always be accepted. */
  uint32_t boundary_layouts;

  /* Since 1.3 (check struct_size; absent means 0): CO_UP_EXTERNAL_IO_* bits, the cases of
   * co_up_subgraph_desc.io_memory that compiled_create honours. 0: the runtime passes none. */
  uint32_t external_io;
} co_up_plugin_api;

typedef const co_up_plugin_api* (*co_up_plugin_get_api_fn)(uint32_t host_abi_major,
                                                           uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* CO_UP_PLUGIN_ABI_H_ */
