/** The Redis Cluster hash slot of a key (of its hash tag, when it has one); the package ships no types. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Buffer): number;
}
