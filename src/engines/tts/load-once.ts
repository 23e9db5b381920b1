/**
 * The neural TTS engines' cache of loaded models (ONNX sessions, style tables), per engine instance and keyed by model
 * name: one promise per key, so concurrent first calls share one load; a failed load is forgotten rather than kept,
 * because the model may be pulled (or repaired) a moment later and the next call must try again.
 */
export class LoadOnce<T> {
  private readonly loads = new Map<string, Promise<T>>();

  /** Loads held (in progress or done). */
  get size(): number {
    return this.loads.size;
  }

  get(key: string, open: () => Promise<T>): Promise<T> {
    let loading = this.loads.get(key);
    if (!loading) {
      const started = open();
      loading = started;
      this.loads.set(key, started);
      // Only this load's own entry: a clear() and a newer load of the same key may have replaced it meanwhile.
      started.catch(() => {
        if (this.loads.get(key) === started) this.loads.delete(key);
      });
    }
    return loading;
  }

  /** Forgets every load (shutdown, or before model files are deleted) and returns those that succeeded, to release. */
  async clear(): Promise<T[]> {
    const all = [...this.loads.values()];
    this.loads.clear();
    return (await Promise.allSettled(all)).flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  }
}
