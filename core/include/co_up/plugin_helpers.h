/*
 * co_up plugin helpers: optional, header-only C99 conveniences for plugin authors.
 *
 * plugin_abi.h stays the whole contract; nothing here crosses the ABI, and every function is
 * `static inline`, so a plugin that uses them still links nothing from co_up. What they save:
 *  - statuses with a formatted message owned by the status, and the matching release;
 *  - element access to the ABI's struct arrays (tensors, nodes) with the stride rule of
 *    plugin_abi.h (the first element's `struct_size`, so an older or newer host still works);
 *  - attribute lookup by name with a default, option lookup by key, tensor element counts.
 * Usable from C99 and C++.
 */
#ifndef CO_UP_PLUGIN_HELPERS_H_
#define CO_UP_PLUGIN_HELPERS_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CO_UP_PRINTF_LIKE(format_index, first_arg) \
  __attribute__((format(printf, format_index, first_arg)))
#else
#define CO_UP_PRINTF_LIKE(format_index, first_arg)
#endif

/* A status from co_up_status_make: the message follows the header in the same allocation.
 * `on_heap` is 0 only for the static stand-in returned when that allocation fails. */
typedef struct co_up_owned_status_ {
  co_up_status status; /* first, so a co_up_status* points at the whole block */
  int on_heap;
} co_up_owned_status_;

/* A non-NULL status with `code` and a printf-formatted one-line message; release it with
 * co_up_status_free (a plugin's `status_release` can simply be that function). Never NULL: when
 * memory runs out it returns a static CO_UP_STATUS_OUT_OF_MEMORY status instead. */
static inline co_up_status* co_up_status_make(int32_t code, const char* format, ...)
    CO_UP_PRINTF_LIKE(2, 3);

static inline co_up_status* co_up_status_make(int32_t code, const char* format, ...) {
  static co_up_owned_status_ out_of_memory = {
      {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY,
       "out of memory (while reporting another error)"},
      0};
  va_list args;
  va_start(args, format);
  int length = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (length < 0) length = 0;
  co_up_owned_status_* owned =
      (co_up_owned_status_*)malloc(sizeof(co_up_owned_status_) + (size_t)length + 1);
  if (owned == NULL) return &out_of_memory.status;
  char* message = (char*)(owned + 1);
  va_start(args, format);
  vsnprintf(message, (size_t)length + 1, format, args);
  va_end(args);
  owned->status.struct_size = sizeof(co_up_status);
  owned->status.code = code;
  owned->status.message = message;
  owned->on_heap = 1;
  return &owned->status;
}

/* Releases a status made by co_up_status_make; NULL is ignored. */
static inline void co_up_status_free(co_up_status* status) {
  if (status != NULL && ((co_up_owned_status_*)status)->on_heap) free(status);
}

/* Element `index` of the sub-graph's tensor / node array, walked with the creator's stride. */
static inline const co_up_tensor_desc* co_up_subgraph_tensor(const co_up_subgraph_desc* graph,
                                                             uint32_t index) {
  return (const co_up_tensor_desc*)((const char*)graph->tensors +
                                    (size_t)index * graph->tensors[0].struct_size);
}

static inline const co_up_node_desc* co_up_subgraph_node(const co_up_subgraph_desc* graph,
                                                         uint32_t index) {
  return (const co_up_node_desc*)((const char*)graph->nodes +
                                  (size_t)index * graph->nodes[0].struct_size);
}

/* Product of the dims (1 for a scalar). */
static inline uint64_t co_up_tensor_elements(const co_up_tensor_desc* tensor) {
  uint64_t count = 1;
  for (uint32_t i = 0; i < tensor->rank; ++i) count *= (uint64_t)tensor->dims[i];
  return count;
}

/* The attribute called `name`, or NULL. */
static inline const co_up_attr* co_up_node_attr(const co_up_node_desc* node, const char* name) {
  for (uint32_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  }
  return NULL;
}

/* Typed lookups: `fallback` when the attribute is absent or of another type (or too short). */
static inline int64_t co_up_attr_int(const co_up_node_desc* node, const char* name,
                                     int64_t fallback) {
  const co_up_attr* a = co_up_node_attr(node, name);
  return a != NULL && a->type == CO_UP_ATTR_INT ? a->i : fallback;
}

static inline double co_up_attr_float(const co_up_node_desc* node, const char* name,
                                      double fallback) {
  const co_up_attr* a = co_up_node_attr(node, name);
  return a != NULL && a->type == CO_UP_ATTR_FLOAT ? a->f : fallback;
}

static inline int64_t co_up_attr_ints_at(const co_up_node_desc* node, const char* name,
                                         uint64_t index, int64_t fallback) {
  const co_up_attr* a = co_up_node_attr(node, name);
  return a != NULL && a->type == CO_UP_ATTR_INTS && index < a->count ? a->ints[index] : fallback;
}

static inline const char* co_up_attr_string(const co_up_node_desc* node, const char* name,
                                            const char* fallback) {
  const co_up_attr* a = co_up_node_attr(node, name);
  return a != NULL && a->type == CO_UP_ATTR_STRING && a->s != NULL ? a->s : fallback;
}

/* The value of option `key`, or NULL. */
static inline const char* co_up_option_find(const co_up_option* options, uint32_t option_count,
                                            const char* key) {
  for (uint32_t i = 0; i < option_count; ++i) {
    if (options[i].key != NULL && strcmp(options[i].key, key) == 0) return options[i].value;
  }
  return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* CO_UP_PLUGIN_HELPERS_H_ */
