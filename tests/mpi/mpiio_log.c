/* An MPI profiling-interface (PMPI) shim for tests/mpi/test_runs.py's `collective` case, loaded
 * with LD_PRELOAD: every MPI-IO write the program (through HDF5) makes is logged with the file
 * byte range it touches and whether it was a collective call, to
 * $SIMMER_MPIIO_LOG.<world rank> at MPI_Finalize. The test compares the independent writes'
 * ranges with where h5py says the archive's raw data lies, so that "every raw transfer was
 * collective" is checked without trusting the program's own counters (or HDF5's report of them).
 *
 * The range of a write through a file view with a derived file type is taken conservatively as
 * the whole span of the type's tiling (lower bound to upper bound), never narrower. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kMaxFiles = 64, kMaxWrites = 1 << 20 };

struct View {
  MPI_File fh;
  MPI_Offset disp;
  MPI_Datatype filetype;
};
struct Write {
  long long begin, end;
  int collective;
};

static struct View views[kMaxFiles];
static int nviews;
static struct Write writes[kMaxWrites];
static long nwrites, lost;

static struct View* view_of(MPI_File fh) {
  for (int i = 0; i < nviews; ++i)
    if (views[i].fh == fh) return &views[i];
  if (nviews == kMaxFiles) return NULL;
  views[nviews].fh = fh;
  views[nviews].disp = 0;
  views[nviews].filetype = MPI_BYTE;
  return &views[nviews++];
}

/* `offset` in etypes (bytes: HDF5's etype is MPI_BYTE) from the view's displacement. */
static void record(MPI_File fh, MPI_Offset offset, int count, MPI_Datatype datatype, int collective) {
  int size = 0;
  PMPI_Type_size(datatype, &size);
  const long long bytes = (long long)count * size;
  if (bytes == 0) return; /* a rank taking part in a collective call with nothing to write */
  const struct View* v = view_of(fh);
  long long begin = offset, end = offset + bytes;
  if (v != NULL) {
    begin += v->disp;
    end += v->disp;
    int contiguous_bytes = v->filetype == MPI_BYTE;
    if (!contiguous_bytes) {
      MPI_Aint lb = 0, extent = 0;
      int tsize = 0;
      PMPI_Type_get_true_extent(v->filetype, &lb, &extent);
      PMPI_Type_size(v->filetype, &tsize);
      const long long tiles = tsize > 0 ? (offset + bytes + tsize - 1) / tsize : 1;
      begin = v->disp + lb;
      end = v->disp + lb + tiles * (long long)extent;
    }
  }
  if (nwrites == kMaxWrites) {
    ++lost;
    return;
  }
  writes[nwrites].begin = begin;
  writes[nwrites].end = end;
  writes[nwrites].collective = collective;
  ++nwrites;
}

static MPI_Offset position(MPI_File fh) {
  MPI_Offset at = 0;
  PMPI_File_get_position(fh, &at);
  return at;
}

int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char* datarep,
                      MPI_Info info) {
  struct View* v = view_of(fh);
  if (v != NULL) {
    v->disp = disp;
    v->filetype = filetype;
  }
  return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
}

int MPI_File_close(MPI_File* fh) {
  for (int i = 0; i < nviews; ++i)
    if (views[i].fh == *fh) views[i] = views[--nviews];
  return PMPI_File_close(fh);
}

int MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                      MPI_Status* status) {
  record(fh, offset, count, datatype, 0);
  return PMPI_File_write_at(fh, offset, buf, count, datatype, status);
}

int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                          MPI_Status* status) {
  record(fh, offset, count, datatype, 1);
  return PMPI_File_write_at_all(fh, offset, buf, count, datatype, status);
}

int MPI_File_iwrite_at(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                       MPI_Request* request) {
  record(fh, offset, count, datatype, 0);
  return PMPI_File_iwrite_at(fh, offset, buf, count, datatype, request);
}

int MPI_File_write(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  record(fh, position(fh), count, datatype, 0);
  return PMPI_File_write(fh, buf, count, datatype, status);
}

int MPI_File_write_all(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  record(fh, position(fh), count, datatype, 1);
  return PMPI_File_write_all(fh, buf, count, datatype, status);
}

int MPI_File_iwrite(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  record(fh, position(fh), count, datatype, 0);
  return PMPI_File_iwrite(fh, buf, count, datatype, request);
}

int MPI_Finalize(void) {
  const char* base = getenv("SIMMER_MPIIO_LOG");
  if (base != NULL) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", base, rank);
    FILE* f = fopen(path, "w");
    if (f != NULL) {
      fprintf(f, "# begin end collective (bytes of the file; %ld writes not logged)\n", lost);
      for (long i = 0; i < nwrites; ++i) fprintf(f, "%lld %lld %d\n", writes[i].begin, writes[i].end, writes[i].collective);
      fclose(f);
    }
  }
  return PMPI_Finalize();
}
