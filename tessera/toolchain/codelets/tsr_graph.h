/* Shared definitions of the graph runtime and its codelets (docs/compiler.md).
 * The numbers must match tessera/toolchain/graph/control.py. */
#ifndef TSR_GRAPH_H
#define TSR_GRAPH_H
#include <stdint.h>

#define TSR_CTRL_MAGIC 0x43475354u   /* "TSGC" */
#define TSR_OP_EXEC 1u
#define TSR_OP_EXCH 2u
#define TSR_OP_REPEAT 3u
#define TSR_OP_PROF 4u    /* optional profile buffer (runtime.c) */
#define TSR_EXIT_BAD_MAGIC 101
#define TSR_EXIT_BAD_OP 102

/* A codelet: `fields` points at the vertex's field words (after the codelet address);
 * the vertex runs as part `part` of `nparts` (nparts > 1 when the compiler split it
 * across contexts; the codelet divides its own work). */
typedef void (*tsr_vertex_fn)(const void *fields, uint32_t part, uint32_t nparts);

/* A tensor field: element pointer and element count. */
#define TSR_FIELD(type, name) type *name; uint32_t name##_n

#endif
