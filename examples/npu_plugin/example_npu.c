/* example-npu: a minimal out-of-tree accelerator plugin for co_up (README.md). Like an NPU plugin
 * it compiles a whole partition into one object run in one call, here as C loops on f32 NCHW (a
 * vendor plugin loads its converted <graph>_<first>_<last> model). Other ops: see supports(). */
#include <co_up/plugin_helpers.h>
#include <float.h>

enum StepKind { CLAMP, CONV, MAXPOOL, ADD }; /* CLAMP: Relu, Clip and the copies */
#define OP_SET "Conv, FullyConnected, MaxPool, Add, Relu, Clip, Identity, Flatten, Reshape"
static const struct { const char* name; enum StepKind kind; } kOps[] = {
    {"Conv", CONV}, {"FullyConnected", CONV}, {"MaxPool", MAXPOOL}, {"Add", ADD},
    {"Relu", CLAMP}, {"Clip", CLAMP}, {"Identity", CLAMP}, {"Flatten", CLAMP}, {"Reshape", CLAMP}};
#define OOM co_up_status_make(CO_UP_STATUS_OUT_OF_MEMORY, "example-npu: out of memory")

typedef struct Step {
  enum StepKind kind;
  float lo, hi;        /* output clamp: the fused activation, Relu or Clip */
  uint32_t x, w, b, y; /* tensor indices; w is Add's second input; b may be CO_UP_NO_TENSOR */
  uint64_t count;      /* output elements */
  int64_t n, c, h, wd, m, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw, group; /* window geometry */
} Step;

struct co_up_factory { int unused; }; /* a vendor plugin keeps its driver handles in these */
struct co_up_device { int unused; };
struct co_up_compiled {
  float** tensors; /* one host buffer per tensor of the partition, constants copied in */
  Step* steps;
  uint32_t tensor_count, step_count, first_layer, last_layer;
  uint32_t *io, io_count[2]; /* tensor indices of the inputs, then the outputs; their counts */
};

static int op_index(const char* op) {
  for (int i = 0; i < (int)(sizeof kOps / sizeof kOps[0]); ++i)
    if (!strcmp(op, kOps[i].name)) return i;
  return -1;
}

/* 1 when `node` can run here; otherwise 0 and why, in `why` (256 bytes). */
static int supports(const co_up_subgraph_desc* g, const co_up_node_desc* node, char* why) {
  const char *op = node->op_type, *act = co_up_attr_string(node, "activation", "none");
  if (op_index(op) < 0)
    return snprintf(why, 256, "op %s is not in example-npu's op set (" OP_SET ")", op), 0;
  for (uint32_t i = 0; i < node->input_count + node->output_count; ++i) {
    uint32_t t = i < node->input_count ? node->inputs[i] : node->outputs[i - node->input_count];
    const co_up_tensor_desc* d = t == CO_UP_NO_TENSOR ? NULL : co_up_subgraph_tensor(g, t);
    if (d != NULL && (d->dtype != CO_UP_DTYPE_F32 || d->layout == CO_UP_LAYOUT_NHWC))
      return snprintf(why, 256, "tensor '%s' is not f32 NCHW", d->name), 0;
  }
  if (strcmp(act, "none") && strcmp(act, "relu") && strcmp(act, "relu6"))
    return snprintf(why, 256, "fused activation '%s' is not supported", act), 0;
  return 1;
}

/* Everything a step needs, copied out of the description (the plugin keeps no pointer into it). */
static void plan(const co_up_subgraph_desc* g, const co_up_node_desc* node, Step* s) {
  const char *op = node->op_type, *act = co_up_attr_string(node, "activation", "none");
  int fc = !strcmp(op, "FullyConnected"); /* a 1x1 convolution over [N, K, 1, 1] */
  s->kind = kOps[op_index(op)].kind;
  s->x = node->inputs[0], s->y = node->outputs[0];
  s->w = node->input_count > 1 ? node->inputs[1] : CO_UP_NO_TENSOR;
  s->b = node->input_count > 2 ? node->inputs[2] : CO_UP_NO_TENSOR;
  s->count = co_up_tensor_elements(co_up_subgraph_tensor(g, s->y));
  int relu = !strcmp(op, "Relu") || strcmp(act, "none"); /* Clip has "min" and "max" */
  s->lo = (float)co_up_attr_float(node, "min", relu ? 0 : -FLT_MAX);
  s->hi = (float)co_up_attr_float(node, "max", !strcmp(act, "relu6") ? 6 : FLT_MAX);
  if (s->kind != CONV && s->kind != MAXPOOL) return;
  const co_up_tensor_desc *x = co_up_subgraph_tensor(g, s->x), *y = co_up_subgraph_tensor(g, s->y);
  const co_up_tensor_desc* w = s->kind == CONV ? co_up_subgraph_tensor(g, s->w) : NULL;
  s->n = x->dims[0], s->m = y->dims[1];
  s->c = fc ? (int64_t)(co_up_tensor_elements(x) / (uint64_t)s->n) : x->dims[1];
  s->h = fc ? 1 : x->dims[2], s->wd = fc ? 1 : x->dims[3];
  s->oh = fc ? 1 : y->dims[2], s->ow = fc ? 1 : y->dims[3];
#define INTS(name, i, absent) co_up_attr_ints_at(node, name, i, absent)
  s->kh = fc ? 1 : w ? w->dims[2] : INTS("kernel_shape", 0, 1);
  s->kw = fc ? 1 : w ? w->dims[3] : INTS("kernel_shape", 1, 1);
  s->sh = INTS("strides", 0, 1), s->sw = INTS("strides", 1, 1);
  s->pt = INTS("pads", 0, 0), s->pl = INTS("pads", 1, 0);
  s->dh = INTS("dilations", 0, 1), s->dw = INTS("dilations", 1, 1); /* MaxPool: always 1 */
  s->group = s->kind == MAXPOOL ? s->c : co_up_attr_int(node, "group", 1); /* pool per channel */
}

static float clamp(float v, const Step* s) { return v < s->lo ? s->lo : v > s->hi ? s->hi : v; }
/* Convolution (grouped, dilated) or max pooling, NCHW, one output element at a time; padded
 * positions are skipped, so padding never contributes to a sum or wins a max. */
static void window(const Step* s, float* const* t) {
  const float *x = t[s->x], *w = s->kind == CONV ? t[s->w] : NULL;
  const float* bias = w && s->b != CO_UP_NO_TENSOR ? t[s->b] : NULL;
  int64_t cg = s->c / s->group, mg = s->m / s->group; /* channels per group, in and out */
  for (int64_t n = 0; n < s->n; ++n)
    for (int64_t m = 0; m < s->m; ++m)
      for (int64_t oy = 0; oy < s->oh; ++oy)
        for (int64_t ox = 0; ox < s->ow; ++ox) {
          float acc = w ? (bias ? bias[m] : 0.0f) : -FLT_MAX;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const float* plane = x + (n * s->c + m / mg * cg + ci) * s->h * s->wd;
            for (int64_t ky = 0, iy = oy * s->sh - s->pt; ky < s->kh; ++ky, iy += s->dh)
              for (int64_t kx = 0, ix = ox * s->sw - s->pl; kx < s->kw; ++kx, ix += s->dw) {
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->wd) continue;
                float v = plane[iy * s->wd + ix];
                if (w) acc += v * w[((m * cg + ci) * s->kh + ky) * s->kw + kx];
                else if (v > acc) acc = v;
              }
          }
          t[s->y][((n * s->m + m) * s->oh + oy) * s->ow + ox] = clamp(acc, s);
        }
}

static void compiled_release(co_up_compiled* c) {
  if (c == NULL) return;
  for (uint32_t i = 0; c->tensors != NULL && i < c->tensor_count; ++i) free(c->tensors[i]);
  free(c->tensors), free(c->steps), free(c->io), free(c);
}

static co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* g,
                                     co_up_compiled** out) {
  char why[256];
  co_up_compiled* c = calloc(1, sizeof *c);
  if (c == NULL || !(c->tensors = calloc(g->tensor_count, sizeof(float*))) ||
      !(c->steps = calloc(g->node_count, sizeof(Step))) ||
      !(c->io = calloc(g->input_count + g->output_count + 1, sizeof(uint32_t))))
    return compiled_release(c), OOM;
  c->tensor_count = g->tensor_count;
  for (uint32_t i = 0; i < g->tensor_count; ++i) {
    const co_up_tensor_desc* t = co_up_subgraph_tensor(g, i);
    uint64_t bytes = co_up_tensor_elements(t) * sizeof(float);
    if (!(c->tensors[i] = calloc(1, bytes + 1))) return compiled_release(c), OOM;
    if (t->data) memcpy(c->tensors[i], t->data, t->data_bytes < bytes ? t->data_bytes : bytes);
  }
  for (uint32_t i = 0; i < g->node_count; ++i) {
    const co_up_node_desc* node = co_up_subgraph_node(g, i);
    if (!supports(g, node, why))
      return compiled_release(c), co_up_status_make(CO_UP_STATUS_UNSUPPORTED,
                                                    "example-npu: node '%s': %s", node->name, why);
    plan(g, node, &c->steps[c->step_count++]);
  }
  memcpy(c->io, g->inputs, g->input_count * sizeof(uint32_t));
  memcpy(c->io + g->input_count, g->outputs, g->output_count * sizeof(uint32_t));
  c->io_count[0] = g->input_count, c->io_count[1] = g->output_count;
  c->first_layer = g->first_layer, c->last_layer = g->last_layer;
  *out = c;
  return NULL;
}

/* The whole partition in one call, which co_up times as one unit (first to last layer). */
static co_up_status* compiled_run(co_up_compiled* c, const co_up_run_hooks* hooks) {
  if (hooks && hooks->layer_begin) hooks->layer_begin(hooks->user_data, c->first_layer);
  for (const Step* s = c->steps; s < c->steps + c->step_count; ++s) {
    const float *x = c->tensors[s->x], *x2 = s->kind == ADD ? c->tensors[s->w] : NULL;
    float* y = c->tensors[s->y];
    if (s->kind == CONV || s->kind == MAXPOOL) window(s, c->tensors);
    else for (uint64_t e = 0; e < s->count; ++e) y[e] = clamp(x[e] + (x2 ? x2[e] : 0), s);
  }
  if (hooks && hooks->layer_end) hooks->layer_end(hooks->user_data, c->last_layer);
  return NULL;
}

static co_up_status* compiled_map(co_up_compiled* c, int32_t dir, uint32_t index, void** out) {
  if (dir < 0 || dir > 1 || index >= c->io_count[dir])
    return co_up_status_make(CO_UP_STATUS_INVALID_ARGUMENT, "example-npu: bad map index %u", index);
  *out = c->tensors[c->io[dir * c->io_count[0] + index]]; /* host memory: nothing to copy */
  return NULL;
}
static co_up_status* compiled_unmap(co_up_compiled* c, int32_t dir, uint32_t i) { return NULL; }

static co_up_status* query_node(co_up_device* device, const co_up_subgraph_desc* g,
                                uint32_t index, co_up_node_support* out) {
  if (index >= g->node_count)
    return co_up_status_make(CO_UP_STATUS_INVALID_ARGUMENT, "example-npu: no node %u", index);
  out->supported = supports(g, co_up_subgraph_node(g, index), out->reason);
  return NULL;
}

/* A vendor plugin opens its driver here, and returns CO_UP_STATUS_NO_DEVICE when it is absent. */
static co_up_status* factory_create(const co_up_option* o, uint32_t n, co_up_factory** out) {
  return (*out = calloc(1, sizeof **out)) ? NULL : OOM;
}
static void factory_release(co_up_factory* factory) { free(factory); }
static co_up_status* device_create(co_up_factory* f, const co_up_option* o, uint32_t n,
                                   co_up_device** out) {
  return (*out = calloc(1, sizeof **out)) ? NULL : OOM;
}
static void device_release(co_up_device* device) { free(device); }

static const co_up_plugin_api kApi = {
    .struct_size = sizeof(co_up_plugin_api),
    .abi_major = CO_UP_ABI_VERSION_MAJOR, .abi_minor = CO_UP_ABI_VERSION_MINOR,
    .name = "example-npu", .version = "1.0.0", .kind = CO_UP_BACKEND_ACCELERATOR,
    .description = "example out-of-tree accelerator, whole partitions in C loops (" OP_SET ")",
    .status_release = co_up_status_free, .device_query_node = query_node,
    .factory_create = factory_create, .factory_release = factory_release,
    .device_create = device_create, .device_release = device_release,
    .compiled_create = compiled_create, .compiled_release = compiled_release,
    .compiled_map = compiled_map, .compiled_unmap = compiled_unmap,
    .compiled_run = compiled_run, .compiled_bind_input = NULL, /* optional: co_up copies */
};

/* The one exported symbol. Minors only append, so this table serves any 1.x host. */
CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t major, uint32_t minor) {
  return major == CO_UP_ABI_VERSION_MAJOR ? &kApi : NULL;
}
