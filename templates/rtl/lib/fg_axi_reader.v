// AXI4 read master for weight rows: each request (address, beats) becomes INCR bursts that never
// cross a 4 KB boundary or exceed 256 beats. Reads stay in order (one ID); up to MAX_BURSTS are
// in flight. Read data is passed through to the consumer.
module fg_axi_reader #(
    parameter integer DATA_W = 32,
    parameter integer LEN_W = 16,
    parameter integer MAX_BURSTS = 16
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [63:0]      req_addr,
    input  wire [LEN_W-1:0] req_beats,
    input  wire             req_valid,
    output wire             req_ready,
    output wire [63:0]      araddr,
    output wire [7:0]       arlen,
    output wire [2:0]       arsize,
    output wire             arvalid,
    input  wire             arready,
    input  wire             rvalid,
    input  wire             rlast,
    input  wire             rready,
    output wire             idle
);
    localparam integer BEAT_BYTES = DATA_W / 8;
    localparam integer SIZE = $clog2(BEAT_BYTES);
    localparam integer FW = $clog2(MAX_BURSTS + 1);
    localparam [31:0] MAX32 = MAX_BURSTS;
    localparam [31:0] SIZE32 = SIZE;

    reg [63:0] addr;
    reg [LEN_W-1:0] left;
    reg [FW-1:0] inflight;

    wire busy = (left != {LEN_W{1'b0}});
    wire [12:0] room_bytes = 13'd4096 - {1'b0, addr[11:0]};
    wire [12:0] room = room_bytes >> SIZE;
    wire [31:0] left32 = {{(32 - LEN_W){1'b0}}, left};
    wire [31:0] room32 = {19'd0, room};
    wire [31:0] len_a = (left32 < room32) ? left32 : room32;
    wire [31:0] len = (len_a > 32'd256) ? 32'd256 : len_a;
    wire ar_fire = arvalid && arready;
    wire r_end = rvalid && rready && rlast;

    assign arvalid = busy && (inflight != MAX32[FW-1:0]);
    assign araddr = addr;
    assign arlen = len[7:0] - 8'd1;
    assign arsize = SIZE32[2:0];
    assign req_ready = !busy || (ar_fire && len == left32);
    assign idle = !busy && inflight == {FW{1'b0}} && !req_valid;

    always @(posedge clk) begin
        if (rst) begin
            left <= {LEN_W{1'b0}};
            inflight <= {FW{1'b0}};
        end else begin
            if (req_valid && req_ready) begin
                addr <= req_addr;
                left <= req_beats;
            end else if (ar_fire) begin
                addr <= addr + ({32'd0, len} << SIZE);
                left <= left - len[LEN_W-1:0];
            end
            if (ar_fire && !r_end) inflight <= inflight + 1'b1;
            else if (r_end && !ar_fire) inflight <= inflight - 1'b1;
        end
    end
endmodule
