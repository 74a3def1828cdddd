/** What a bench server reports once it listens on 127.0.0.1. */
export interface StartedServer {
  port: number
}
