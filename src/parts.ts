// The parts of the service that run (the database, the writers, the change feed, the jobs, the
// rate limit's store, ...): each is started through one list, its stop given beside its start,
// and they are stopped in the reverse of the order they were started in. A part may use any part
// started before it, to its last moment: those stop after it.

/** One running part: what stops it, under its name. */
interface Started {
  name: string
  stop(): unknown
}

export class Parts {
  private readonly started: Started[] = []

  /** Starts a part after every part started so far; it will be stopped before any of them. */
  async start<T>(name: string, start: () => T | Promise<T>, stop: (part: T) => unknown): Promise<T> {
    const part = await start()
    this.started.push({ name, stop: () => stop(part) })
    return part
  }

  /** The names of the parts started, in order. */
  get names(): string[] {
    return this.started.map((p) => p.name)
  }

  /**
   * Stops every part started, the last first, each once its later ones have stopped. A part that
   * fails to stop does not keep the ones before it running: they stop too, and its failure is
   * thrown after (the first, when several fail).
   */
  async stop(): Promise<void> {
    let failure: { error: unknown } | undefined
    for (let part = this.started.pop(); part; part = this.started.pop()) {
      try {
        await part.stop()
      } catch (error) {
        failure ??= { error }
      }
    }
    if (failure) throw failure.error
  }
}
